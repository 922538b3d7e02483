"""Timings of irinnov.meta on the TREC-COVID round 1 AP table (143 systems x 30 topics), and ranx's tests on it.

Run by hand:  IRINNOV_MIRROR=../shared/data python benchmarks/bench_meta.py [--ranx-full]
Targets (issue 3): randomized Tukey HSD with B=1000 <= 2 s; all paired t-tests well under 1 s;
stability with 1000 trials <= 1 s. Also times scipy's per-value studentized range (the reason Tukey
HSD tools are slow) against irinnov's vectorised one, on a sample of the pairs, and ranx 0.3.21's
statistical tests (`ranx.statistical_tests.compute_statistical_significance`, the part of `ranx.compare`
after evaluation) fed the same AP table:
- "student": scipy `ttest_rel` for every ordered pair (ranx tests (a, b) and (b, a)); p-values compared with ours;
- "tukey": scipy `tukey_hsd` on the 143 per-topic AP vectors as independent groups (one-way, unpaired: not the
  two-way HSD of irinnov's `tukey`); all 143 systems with --ranx-full (about 8 minutes here), else 40 systems;
- "fisher": a per-pair paired randomization test (1000 permutations, numba), on 30 systems after a warm-up
  call, extrapolated to all ordered pairs.
"""
import sys
import time
import warnings

import numpy as np
import pandas as pd
from scipy import stats

from irinnov import meta, metrics
from irinnov.datasets import load
from timing import best_of


def main():
    c = load("trec-covid-round1").campaign()
    ap = metrics.average_precision(c)
    S, n = ap.shape
    print(f"TREC-COVID round 1 AP table: {S} systems x {n} topics, {S * (S - 1) // 2} pairs")
    rows = []
    for test in meta.TESTS:
        t, r = best_of(lambda: meta.discriminative_power(ap, test=test, B=1000, seed=0))
        rows.append((f"discriminative_power({test!r}, B=1000)", t, f"{r.count} pairs significant"))
    ia, ib = np.triu_indices(S, 1)
    X = ap.to_numpy()
    pref = pd.DataFrame(X[ia] - X[ib], columns=ap.columns,
                        index=pd.MultiIndex.from_arrays([ap.index[ia], ap.index[ib]], names=["a", "b"]))
    t, r = best_of(lambda: meta.discriminative_power(pref, test="randomized-tukey", B=1000, seed=0), repeat=1)
    rows.append(("same, as a preference table (a, b) x topics", t, f"{r.count} pairs significant"))
    for f in (0.0, 0.05):
        t, v = best_of(lambda: meta.stability(ap, trials=1000, seed=0, fuzziness=f))
        rows.append((f"stability(trials=1000, f={f})", t, f"{v:.4f}"))
    t, _ = best_of(lambda: meta.topic_degradation(ap, ks=(1, 2, 3, 5, 10, 15, 20, 25), trials=20), repeat=1)
    rows.append(("topic_degradation(8 k x 20 trials)", t, ""))
    t, _ = best_of(lambda: meta.judgment_degradation(c, metrics.average_precision, fractions=(.1, .5, .9), trials=5), repeat=1)
    rows.append(("judgment_degradation(AP, 3 f x 5 trials)", t, ""))
    t, _ = best_of(lambda: meta.system_sampling(c, metrics.precision, sizes=(2, 8, 32), trials=20), repeat=1)
    rows.append(("system_sampling(P@10, N = 2, 8, 32, 20 trials)", t, "generic driver: one sub-campaign per trial"))
    X = ap.to_numpy(); mse, df = meta.anova_residual_ms(X); m = X.mean(1)
    ia, ib = np.triu_indices(S, 1)
    q = np.abs(m[ia] - m[ib]) / np.sqrt(mse / n)
    sample = q[:: max(1, len(q) // 50)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter(); exact = stats.studentized_range.sf(sample, S, df); ts = time.perf_counter() - t0
    ours = meta.studentized_range_sf(sample, S, df)
    rows.append((f"scipy studentized_range.sf, {len(sample)} values", ts,
                 f"{ts / len(sample) * len(q):.0f} s extrapolated to all pairs; max |ours - scipy| = {np.abs(ours - exact).max():.1e}"))
    rows += ranx_rows(ap, full="--ranx-full" in sys.argv)
    w = max(len(r[0]) for r in rows)
    for name, t, note in rows:
        print(f"{name:<{w}}  {t:8.3f} s  {note}")


def ranx_rows(ap, full=False):
    "ranx's statistical tests on the same score table (ranx.compare minus its evaluation step)."
    from importlib.metadata import version
    from ranx.statistical_tests import compute_statistical_significance as css
    names = list(ap.index)
    scores = {s: {"AP": ap.loc[s].to_numpy()} for s in names}
    S = len(names)
    rows = []

    def run(test, sub, **kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            out = css(sub, {s: scores[s] for s in sub}, stat_test=test, max_p=0.05, **kw)
            return time.perf_counter() - t0, out

    t, out = run("student", names)
    ia, ib = np.triu_indices(S, 1)
    X = ap.to_numpy()
    raw = meta._t_pvalues(X[ia] - X[ib])                                       # our paired t before correction
    theirs = np.array([out[frozenset([names[i], names[j]])]["AP"]["p_value"] for i, j in zip(ia, ib)])
    ok = ~np.isnan(theirs)
    rows.append((f"ranx 'student' ({S * (S - 1)} ordered pairs)", t,
                 f"max |p_ranx - p_ours| = {np.abs(theirs[ok] - raw[ok]).max():.1e} over {ok.sum()} pairs "
                 f"({(~ok).sum()} NaN in ranx: identical systems); ranx {version('ranx')}"))
    k = S if full else 40
    t, out = run("tukey", names[:k])
    note = "one-way unpaired HSD via scipy.stats.tukey_hsd"
    if k < S: note += f"; x{(S / k) ** 2:.1f} (pairs) extrapolates to {t * (S / k) ** 2:.0f} s for all {S}"
    rows.append((f"ranx 'tukey', {k} systems", t, note))
    run("fisher", names[:3], n_permutations=1000)                                  # numba compilation
    k = 30
    t, _ = run("fisher", names[:k], n_permutations=1000)
    rows.append((f"ranx 'fisher' (1000 permutations), {k} systems", t,
                 f"{t / (k * (k - 1)) * S * (S - 1):.0f} s extrapolated to all {S * (S - 1)} ordered pairs"))
    return rows


if __name__ == "__main__":
    main()
