"""`irinnov evaluate` against trec_eval 9.0.8 and 10.0 themselves, line for line, over many `-m` combinations and
flags (official, all_trec, measures with parameters, repeated -m, -q, -c, -n, -l, -M, -M 0, -J): stdout equal to the binary's,
except the lines of measures irinnov does not compute (said on stderr)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import oracle_build as ob

MIRROR = Path(os.environ.get("IRINNOV_MIRROR", ob.SHARED / "data"))
TEST = MIRROR / "github" / "usnistgov" / "trec_eval" / "test"
IRINNOV = [sys.executable, "-c", "import sys; from irinnov.cli import main; sys.exit(main())"]
NOT_COMPUTED = {"relstring", "rbp", "rbp_resid", "unj_5", "unj_10", "unj_20"}

MEASURES = [
    ["official"], ["all_trec"], ["official", "P.5,10"], ["P.5,10", "official"], ["map"], ["P.10,5"], ["P.5", "P.20"],
    ["map", "map"], ["official", "all_trec"], ["P.5", "official", "P.100"], ["ndcg_cut.10", "map_cut.100,5"],
    ["iprec_at_recall.0.25,0.5"], ["Rprec_mult.0.5,1.5"], ["11pt_avg.0.2,0.8"], ["set_F.0.5"], ["set_F.2,3"],
    ["success.1,3"], ["relative_P.7"], ["recall.50,10"], ["utility"], ["utility.2,-1,0,0"], ["binG"], ["G"],
    ["ndcg_rel"], ["Rndcg"], ["G.1=3.5,2=9.0"], ["ndcg_rel.0=1,1=2"], ["Rndcg.1=2,2=5"], ["ndcg", "ndcg_cut"],
    ["gm_map", "gm_bpref", "infAP", "bpref"], ["num_q", "num_ret", "num_rel", "num_rel_ret"], ["runid", "map"],
    ["set_P", "set_recall", "set_relative_P", "set_map", "num_nonrel_judged_ret"], ["recip_rank", "Rprec"],
    ["P.1000,1", "recall.1"], ["map", "P.5", "G", "utility", "P.10"],
]
@pytest.mark.parametrize("version", ["9", "10"])
@pytest.mark.parametrize("measures", [["official", "P.5,10"], ["all_trec"]])
def test_readme_example_in_a_subprocess(binaries, version, measures):
    "`irinnov evaluate -c -m official -m P.5,10`: P_5 and P_10 only after the official set, as trec_eval prints it."
    te, me = both(binaries[version], version, ["-c"], measures, TEST / "qrels.test", TEST / "results.test",
                  subprocess_cli=True)
    want = [l for l in te.stdout.splitlines() if l.split("\t")[0].strip() not in NOT_COMPUTED]
    assert me.returncode == 0 and me.stdout.splitlines() == want


FLAGS = [[], ["-q"], ["-c"], ["-q", "-c"], ["-n", "-q"], ["-l2"], ["-q", "-l0"], ["-M10"], ["-q", "-c", "-M3"],
         ["-q", "-M0"], ["-q", "-c", "-M", "0"], ["-q", "-J"], ["-q", "-c", "-J", "-M3"]]


@pytest.fixture(scope="module")
def binaries(tmp_path_factory):
    reason = ob.why_not()
    if reason: pytest.skip(reason)
    if not TEST.is_dir(): pytest.skip(f"no trec_eval test files under {MIRROR}")
    return ob.build(tmp_path_factory.mktemp("trec_eval"))


def in_process(argv):
    "The command run in this process (the matrix has hundreds of cases): exit code, stdout, stderr."
    import contextlib, io, types
    from irinnov.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err): code = main(argv)
    return types.SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


def both(binary, version, flags, measures, qrels, run, subprocess_cli: bool = False):
    "trec_eval's run and irinnov's (in a subprocess, or in this process) on the same flags and -m arguments."
    m = [x for n in measures for x in ("-m", n)]
    te = subprocess.run([str(binary), *flags, *m, str(qrels), str(run)], capture_output=True, text=True)
    argv = ["evaluate", "--trec-eval", version, "--tag", *flags, *m, str(qrels), str(run)]
    me = subprocess.run([*IRINNOV, *argv], capture_output=True, text=True) if subprocess_cli else in_process(argv)
    return te, me


def test_every_combination(binaries):
    "Each -m combination × flags × version: the same stdout (measures irinnov does not compute left out, and said)."
    identical, cases, bad = 0, 0, []
    for version in ("9", "10"):
        for measures in MEASURES:
            for flags in FLAGS:
                qrels = TEST / ("qrels.rel_level" if "-l2" in flags else "qrels.test")
                te, me = both(binaries[version], version, flags, measures, qrels, TEST / "results.test")
                cases += 1
                assert te.returncode == 0, (version, measures, flags, te.stderr)
                want = [l for l in te.stdout.splitlines() if l.split("\t")[0].strip() not in NOT_COMPUTED]
                if me.returncode == 0 and me.stdout.splitlines() == want: identical += 1
                else: bad.append((version, measures, flags, me.returncode, me.stderr.strip()[-300:]))
                if want != te.stdout.splitlines():
                    assert "not computed by irinnov" in me.stderr, (version, measures, flags)
    print(f"{identical} of {cases} combinations identical")
    assert not bad, f"{len(bad)} of {cases} differ: {bad[:5]}"


@pytest.mark.parametrize("measures", [["P.5,5"], ["P.0"], ["utility.1,2"], ["relstring"]])
def test_refused_as_trec_eval_refuses(binaries, measures):
    "A cut-off given twice or below 1, a utility without its 4 coefficients, a measure not computed: an error, not output."
    te, me = both(binaries["9"], "9", [], measures, TEST / "qrels.test", TEST / "results.test", subprocess_cli=True)
    assert me.returncode != 0 and me.stdout == "" and "irinnov: error:" in me.stderr
    if measures != ["relstring"]: assert te.returncode != 0


def test_first_parameters_win(binaries):
    "`-m P.5 -m P.20`: trec_eval keeps the first parameters given for a measure (P_5 only)."
    te, me = both(binaries["9"], "9", [], ["P.5", "P.20"], TEST / "qrels.test", TEST / "results.test",
                  subprocess_cli=True)
    assert [l.split()[0] for l in me.stdout.splitlines()] == ["P_5"] == [l.split()[0] for l in te.stdout.splitlines()]


# --------------------------------------------------------------------------- runs that do not fit the qrels

def cli(*argv):
    return subprocess.run([*IRINNOV, *map(str, argv)], capture_output=True, text=True)


@pytest.fixture
def files(tmp_path):
    (tmp_path / "qrels").write_text("1 0 a 1\n1 0 b 0\n2 0 c 1\n3 0 d 1\n")
    (tmp_path / "other").write_text("9 Q0 a 1 2.0 r\n")                 # no qrels topic
    (tmp_path / "part").write_text("1 Q0 a 1 2.0 r\n1 Q0 b 2 1.0 r\n")   # 1 of the 3 qrels topics
    return tmp_path


@pytest.mark.parametrize("flags", [[], ["-c"], ["--trec-eval", "10"]])
def test_no_topic_in_common_stops_with_trec_eval_status(binaries, files, flags):
    "trec_eval's message and exit status 7 (trec_eval 9.0.8 with and without -c), nothing on stdout."
    r = cli("evaluate", *flags, "-m", "map", files / "qrels", files / "other")
    te = subprocess.run([str(binaries["9"]), *[f for f in flags if f == "-c"], "-m", "map", str(files / "qrels"),
                         str(files / "other")], capture_output=True, text=True)
    assert te.returncode == 7 and "No queries with both results and relevance info" in te.stderr
    assert r.returncode == 7 and r.stdout == ""
    assert "No queries with both results and relevance info: run 'other' shares no topic with the qrels" in r.stderr


def test_no_topic_in_common_under_10_c_prints_the_zeros(binaries, files):
    "trec_eval 10.0 -c prints map 0.0000 for such a run: so does irinnov --trec-eval 10 -c, with a warning."
    r = cli("evaluate", "-c", "--trec-eval", "10", "-m", "map", files / "qrels", files / "other")
    te = subprocess.run([str(binaries["10"]), "-c", "-m", "map", str(files / "qrels"), str(files / "other")],
                        capture_output=True, text=True)
    assert r.returncode == te.returncode == 0 and r.stdout == te.stdout
    assert "run 'other' shares no topic with the qrels" in r.stderr


def test_partial_run_says_how_many_topics_it_lacks(files):
    r = cli("evaluate", "-m", "map", files / "qrels", files / "part")
    assert r.returncode == 0 and r.stdout.split() == ["map", "all", "1.0000"]
    assert "'part' lacks 2" in r.stderr and "3 qrels topics" in r.stderr


def test_report_and_compare_refuse_a_run_without_common_topic(files, tmp_path):
    for argv in (["report", files / "qrels", files / "part", files / "other", "-o", tmp_path / "rep"],
                 ["compare", files / "qrels", files / "part", files / "other", "-m", "AP"]):
        r = cli(*argv)
        assert r.returncode != 0 and "run 'other' shares no topic with the qrels" in r.stderr, (argv, r.stderr)


def test_library_refuses_or_warns():
    import pandas as pd
    from irinnov import metrics as M
    qrels = pd.DataFrame({"query": ["1", "2"], "doc": ["a", "b"], "grade": [1, 1]})
    runs = pd.DataFrame({"system": "s", "query": ["9"], "doc": ["a"], "score": [1.0]})
    with pytest.warns(UserWarning):
        with pytest.raises(M.NoCommonTopicError, match="shares no topic"): M.evaluate(runs, qrels, ["map"], complete=False)
    with pytest.warns(M.NoCommonTopicWarning): assert M.evaluate(runs, qrels, ["map"]).loc["s", "map"] == 0


def test_repeated_qrels_line_is_refused_naming_both_lines(tmp_path):
    (tmp_path / "q").write_text("1 0 a 1\n1 0 b 0\n1 0 a 1\n")
    (tmp_path / "r").write_text("1 Q0 a 1 2.0 r\n")
    r = cli("evaluate", "-m", "map", tmp_path / "q", tmp_path / "r")
    assert r.returncode == 1 and r.stdout == ""
    assert f"{tmp_path / 'q'}:3: query '1', doc 'a' judged twice (lines 1, 3)" in r.stderr


def test_level_0_is_accepted(binaries):
    te, me = both(binaries["9"], "9", ["-l", "0"], ["official"], TEST / "qrels.test", TEST / "results.test",
                  subprocess_cli=True)
    assert me.returncode == 0 and me.stdout == te.stdout


@pytest.mark.parametrize("flags", [["-M", "0"], ["-M0", "-c", "-q"], ["-J", "-q"], ["-J", "-c", "-q", "-M", "5"]])
def test_empty_and_judged_only_lists_on_trec_dl(binaries, flags, tmp_path):
    "-M 0 (every list empty: map 0.0000, iprec_at_recall_0.00 0/0 printed -nan) and -J on TREC DL 2020 runs, both versions."
    from irinnov import datasets
    try: root = datasets.fetch("trec-dl-2020-passage")
    except Exception as e: pytest.skip(f"no TREC DL 2020 copy: {e}")
    qrels = next(root.rglob("qrels.dl20-passage.txt"))
    runs = sorted(root.rglob("dl-20-official-input.p_bm25.gz"))[:1] + sorted(root.rglob("dl-20-official-input.bert_6.gz"))[:1]
    assert len(runs) == 2
    for version in ("9", "10"):
        for gz in runs:
            import gzip
            run = tmp_path / gz.stem
            run.write_bytes(gzip.decompress(gz.read_bytes()))
            te, me = both(binaries[version], version, flags, ["all_trec"], qrels, run)
            want = [l for l in te.stdout.splitlines() if l.split("\t")[0].strip() not in NOT_COMPUTED]
            assert te.returncode == 0 and me.returncode == 0, me.stderr
            assert me.stdout.splitlines() == want, (version, gz.name, flags)
            if "-M0" in flags or flags[:2] == ["-M", "0"]:
                assert "map                   \tall\t0.0000" in me.stdout and "iprec_at_recall_0.00  \tall\t  -nan" in me.stdout


@pytest.mark.parametrize("flag", ["-N", "-R", "-T", "-Z", "-o", "-D", "-v"])
def test_trec_eval_options_not_taken_are_refused_in_one_line(flag):
    "trec_eval's other options: one line naming the option and why, exit 2, nothing on stdout, no traceback."
    args = [flag] + ([] if flag in ("-o", "-v") else ["1"])
    me = subprocess.run([*IRINNOV, "evaluate", *args, "-m", "map", str(TEST / "qrels.test"), str(TEST / "results.test")],
                        capture_output=True, text=True)
    assert me.returncode == 2 and me.stdout == ""
    assert me.stderr.startswith(f"irinnov: error: {flag} (trec_eval's") and me.stderr.count("\n") == 1


def test_empty_lists_are_evaluate_only(tmp_path):
    "-M 0 in compare (every value 0) is refused in one line, not a leaderboard of zeros."
    me = subprocess.run([*IRINNOV, "compare", "-M", "0", str(TEST / "qrels.test"), str(TEST / "results.test")],
                        capture_output=True, text=True)
    assert me.returncode == 2 and "-M 0" in me.stderr and me.stderr.count("\n") == 1
