"""Build trec_eval 9.0.8 and 10.0 from ../shared/oracles into a temporary folder, run them, and read their output.

Used by the parity tests (a session fixture builds each binary once) and by the 07_trec_eval notebook. The sources
are never copied into the project: they are built from the shared folder, and the tests skip with a reason where
there is no such folder or no C compiler."""
from __future__ import annotations

import fcntl
import hashlib
import io
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pandas as pd

SHARED = Path(__file__).resolve().parents[2] / "shared"
ORACLES = Path(os.environ.get("IRINNOV_ORACLES", SHARED / "oracles"))
VERSIONS = {"9": "trec_eval-9.0.8", "10": "trec_eval-10.0"}


def why_not() -> str | None:
    "The reason the binaries cannot be built here, or None."
    missing = [v for v in VERSIONS.values() if not (ORACLES / v / "Makefile").is_file()]
    if missing: return f"no trec_eval sources ({', '.join(missing)}) under {ORACLES}"
    if not shutil.which("make"): return "no 'make' on this machine"
    if not (shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")): return "no C compiler on this machine"
    return None


PRINTERS = ("meas_print_final.c", "meas_print_single.c")


def _signature(src: Path) -> str:
    "A digest of the sources' names, sizes and modification times: a changed source gets a new build."
    h = hashlib.sha256(str(src.resolve()).encode())
    for f in sorted(src.rglob("*")):
        if f.is_file():
            st = f.stat()
            h.update(f"{f.relative_to(src)}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def _compile(src: Path, d: Path, precise: bool) -> Path:
    if not d.exists():
        shutil.copytree(src, d)
        if precise:     # the copy prints every value with 17 significant digits instead of 4 decimals
            for name in PRINTERS:
                p = d / name
                p.write_text(p.read_text().replace("%6.4f", "%.17g"))
    r = subprocess.run(["make", "-s", "-C", str(d)], capture_output=True, text=True)
    binary = d / "trec_eval"
    if r.returncode or not binary.is_file(): raise RuntimeError(f"building {d.name} failed: {r.stderr.strip()[:300]}")
    return binary


def _make(src: Path, d: Path, precise: bool) -> Path:
    """The binary of `src` (printing 17 significant digits if `precise`), built once per machine and sources.

    The test workers and notebooks share one build under the system's temporary folder, made under a file lock into a
    scratch folder and renamed into place, so no process ever runs a half-built binary; `d` is where it is built when
    that folder cannot be written."""
    cache = Path(tempfile.gettempdir()) / f"irinnov-trec-eval-{os.getuid()}"
    final = cache / f"{src.name}-{'precise' if precise else 'released'}-{_signature(src)}"
    binary = final / "trec_eval"
    if binary.is_file(): return binary
    try: cache.mkdir(parents=True, exist_ok=True)
    except OSError: return _compile(src, d, precise)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.is_file():
            scratch = Path(tempfile.mkdtemp(dir=cache, prefix=".build-"))
            try:
                _compile(src, scratch / "src", precise)
                os.replace(scratch / "src", final)
            finally: shutil.rmtree(scratch, ignore_errors=True)
    return binary


def build(dest: Path) -> dict:
    """Build both versions under `dest`, as released (4 decimals) and printing 17 significant digits.

    Returns {'9': binary, '10': binary, '9-precise': binary, '10-precise': binary}; RuntimeError if a build fails."""
    out = {}
    for v, folder in VERSIONS.items():
        out[v] = _make(ORACLES / folder, Path(dest) / folder, False)
        out[f"{v}-precise"] = _make(ORACLES / folder, Path(dest) / f"{folder}-precise", True)
    return out


def run(binary, qrels, run_file, *flags) -> tuple[int, dict, str]:
    "Run trec_eval; returns (exit code, {(measure, query): printed value}, stderr)."
    r = subprocess.run([str(binary), *flags, str(qrels), str(run_file)], capture_output=True, text=True)
    vals = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3: vals[(parts[0], parts[1])] = parts[2]
    return r.returncode, vals, r.stderr


def run_frame(binary, qrels, run_file, *flags) -> tuple[int, pd.DataFrame, str]:
    "Run trec_eval; returns (exit code, its output as a frame (measure, query, value), stderr)."
    r = subprocess.run([str(binary), *flags, str(qrels), str(run_file)], capture_output=True, text=True)
    cols = ["measure", "query", "value"]
    if not r.stdout.strip(): return r.returncode, pd.DataFrame(columns=cols, dtype=object), r.stderr
    # trec_eval prints `measure<spaces>\tquery\tvalue`: three whitespace-separated fields, read by pandas' C parser
    df = pd.read_csv(io.StringIO(r.stdout), sep=r"\s+", header=None, names=cols, dtype=str, keep_default_na=False,
                     engine="c")
    return r.returncode, df, r.stderr


def compare_frames(theirs: pd.DataFrame, mine: pd.DataFrame, tol: float = 1e-9) -> tuple[int, list]:
    """Values compared and mismatches (|difference| > tol, or printed by one side only) of a full-precision binary's
    output (measure, query, value) and ours (measure, query, value); `runid` is left out."""
    theirs = theirs[theirs.measure != "runid"]
    m = theirs.merge(mine[["measure", "query", "value"]], on=["measure", "query"], how="outer",
                     suffixes=("_te", "_ours"), indicator=True)
    te = pd.to_numeric(m.value_te, errors="coerce")
    bad = m[(m._merge != "both") | ~((te - m.value_ours).abs() <= tol)]
    return len(m), [((r.measure, r.query), r.value_te, r.value_ours) for r in bad.head(50).itertuples()] + \
        [None] * max(0, len(bad) - 50)


def write_qrels(qrels, path) -> Path:
    "A qrels frame (query, doc, grade) as a TREC qrels file."
    with open(path, "w") as f:
        for q, d, g in qrels[["query", "doc", "grade"]].itertuples(index=False): f.write(f"{q} 0 {d} {int(g)}\n")
    return Path(path)


def write_run(runs, path, tag: str = "run") -> Path:
    "One system's rows (query, doc, score) as a TREC run file; scores written exactly (repr)."
    with open(path, "w") as f:
        for i, (q, d, s) in enumerate(runs[["query", "doc", "score"]].itertuples(index=False)):
            f.write(f"{q} Q0 {d} {i + 1} {float(s)!r} {tag}\n")
    return Path(path)
