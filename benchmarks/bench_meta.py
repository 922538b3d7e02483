"""Timings of irinnov.meta on the TREC-COVID round 1 AP table (143 systems x 30 topics).

Run by hand:  IRINNOV_MIRROR=../shared/data python benchmarks/bench_meta.py
Targets (issue 3): randomized Tukey HSD with B=1000 <= 2 s; all paired t-tests well under 1 s;
stability with 1000 trials <= 1 s. Also times scipy's per-value studentized range (the reason Tukey
HSD tools are slow) against irinnov's vectorised one, on a sample of the pairs.
"""
import time
import warnings

import numpy as np
import pandas as pd
from scipy import stats

from irinnov import meta, metrics
from irinnov.datasets import load


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter(); out = fn(); times.append(time.perf_counter() - t0)
    return min(times), out


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
    w = max(len(r[0]) for r in rows)
    for name, t, note in rows:
        print(f"{name:<{w}}  {t:8.3f} s  {note}")


if __name__ == "__main__":
    main()
