"Tests of irinnov.meta against independent oracles (scipy, statsmodels, loop implementations, hand-worked values)."
import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from irinnov import meta
from irinnov.meta import (compare_orderings, discriminative_power, drop_judgments, judgment_degradation, kendall_tau,
                          pairwise_pvalues, stability, system_sampling, system_scores, tau_ap, topic_degradation)
from irinnov.trec import NO_GRADE, prepare


def table(X, names=None, hib=True):
    X = np.asarray(X, float)
    names = names or [f"s{i:02d}" for i in range(len(X))]
    df = pd.DataFrame(X, index=pd.Index(names, name="system"),
                      columns=pd.Index([f"q{j:02d}" for j in range(X.shape[1])], name="query"))
    df.attrs.update(measure="m", higher_is_better=hib)
    return df


def rand_table(S=7, n=9, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    X = rng.random((S, n))
    if ties: X = np.round(X * 4) / 4
    return table(X)


# --------------------------------------------------------------------------- correlations

def test_kendall_tau_matches_scipy_with_ties():
    rng = np.random.default_rng(1)
    for _ in range(20):
        a = pd.Series(rng.integers(0, 5, 12).astype(float), index=[f"s{i}" for i in range(12)])
        b = pd.Series(rng.integers(0, 5, 12).astype(float), index=[f"s{i}" for i in range(12)])
        assert abs(kendall_tau(a, b) - stats.kendalltau(a, b).statistic) < 1e-12


def test_kendall_tau_tables_use_row_means_and_orientation():
    t = rand_table()
    u = rand_table(seed=5)
    assert abs(kendall_tau(t, u) - stats.kendalltau(t.mean(axis=1), u.mean(axis=1)).statistic) < 1e-12
    low = table(-u.to_numpy(), hib=False)
    assert abs(kendall_tau(t, low, higher_is_better=(None, False)) - kendall_tau(t, u)) < 1e-12
    # attrs saying lower is better are not trusted alone (a negated table keeps them): the caller states the direction
    with pytest.raises(ValueError, match="pass higher_is_better="):
        kendall_tau(t, low)
    with pytest.raises(ValueError, match="pass higher_is_better="):
        kendall_tau(t, -low)
    assert abs(kendall_tau(t, -low, higher_is_better=True) - kendall_tau(t, u, higher_is_better=False)) < 1e-12
    # matched by name, not by position
    shuffled = u.mean(axis=1).iloc[::-1]
    assert abs(kendall_tau(t, shuffled) - kendall_tau(t, u)) < 1e-12


def tau_ap_loop(truth, other):
    "Yilmaz et al. 2008, no ties: walk down `other`."
    order = sorted(other, key=lambda s: -other[s])
    n = len(order)
    total = 0.0
    for i in range(1, n):
        c = sum(truth[order[j]] > truth[order[i]] for j in range(i))
        total += c / i
    return 2 / (n - 1) * total - 1


def test_tau_ap_hand_worked():
    truth = pd.Series([4., 3, 2, 1], index=list("ABCD"))
    assert abs(tau_ap(truth, pd.Series([3., 4, 2, 1], index=list("ABCD"))) - 1 / 3) < 1e-12
    assert abs(tau_ap(truth, pd.Series([4., 3, 1, 2], index=list("ABCD"))) - 7 / 9) < 1e-12
    # other = C, A, B, D: i=2 A: 0/1; i=3 B: 1/2; i=4 D: 3/3 -> 2/3*(3/2) - 1 = 0
    assert abs(tau_ap(truth, pd.Series([2., 1, 4, 0], index=list("ABCD")))) < 1e-12
    assert abs(tau_ap(truth, -truth) + 1) < 1e-12


def test_tau_ap_matches_loop_without_ties():
    rng = np.random.default_rng(2)
    for _ in range(30):
        n = int(rng.integers(2, 15))
        names = [f"s{i}" for i in range(n)]
        t = dict(zip(names, rng.permutation(n).astype(float)))
        o = dict(zip(names, rng.permutation(n).astype(float)))
        assert abs(tau_ap(pd.Series(t), pd.Series(o)) - tau_ap_loop(t, o)) < 1e-12


def tau_ap_ties_loop(truth, other):
    "The documented tie rule, item by item: compare with the items strictly above in `other`; truth ties earn 1/2."
    names = list(truth)
    total, counted = 0.0, 0
    for v in names:
        above = [u for u in names if other[u] > other[v]]
        if not above: continue
        credit = sum(1.0 if truth[u] > truth[v] else 0.5 if truth[u] == truth[v] else 0.0 for u in above)
        total += credit / len(above)
        counted += 1
    return 2 / counted * total - 1


@pytest.mark.parametrize("seed", range(6))
def test_tau_ap_ties(seed):
    rng = np.random.default_rng(seed)
    names = list("ABCDEFG")
    t = dict(zip(names, rng.integers(0, 3, 7).astype(float)))
    o = dict(zip(names, rng.integers(0, 3, 7).astype(float)))
    if len(set(o.values())) > 1:
        assert abs(tau_ap(pd.Series(t), pd.Series(o)) - tau_ap_ties_loop(t, o)) < 1e-12
    assert abs(tau_ap(pd.Series(o), pd.Series(o)) - 1) < 1e-12 or len(set(o.values())) == 1


def test_tau_ap_tie_hand_cases():
    truth = pd.Series([4., 3, 2, 1], index=list("ABCD"))
    # truth A = B > C > D against A > B > C > D: (1/2 + 1 + 1) * 2/3 - 1 = 2/3
    assert abs(tau_ap(pd.Series([4., 4, 2, 1], index=list("ABCD")), truth) - 2 / 3) < 1e-12
    # other A = B > C = D against truth A > B > C > D: C and D each see {A, B} above: 1; 2/2 * 2 - 1 = 1
    assert abs(tau_ap(truth, pd.Series([2., 2, 1, 1], index=list("ABCD"))) - 1) < 1e-12
    # other D > A = B = C: A, B, C see {D} above, wrongly: 2/3 * 0 - 1 = -1
    assert abs(tau_ap(truth, pd.Series([1., 1, 1, 2], index=list("ABCD"))) + 1) < 1e-12
    assert np.isnan(tau_ap(truth, pd.Series([1., 1, 1, 1], index=list("ABCD"))))


def test_compare_orderings():
    a, b, c = rand_table(seed=1), rand_table(seed=2), rand_table(seed=3)
    m = compare_orderings({"a": a, "b": b, "c": c})
    assert abs(m.loc["a", ("tau", "b")] - kendall_tau(a, b)) < 1e-12
    assert abs(m.loc["b", ("tau_ap", "c")] - tau_ap(b, c)) < 1e-12
    assert abs(m.loc["c", ("tau_ap", "b")] - tau_ap(c, b)) < 1e-12
    assert (np.diag(m["tau"].to_numpy()) == 1).all()


# --------------------------------------------------------------------------- t-tests

def test_t_bonferroni_and_holm_match_scipy_and_statsmodels():
    from statsmodels.stats.multitest import multipletests
    t = rand_table(S=8, n=12, seed=4)
    pairs = list(itertools.combinations(range(8), 2))
    raw = np.array([stats.ttest_rel(t.iloc[i], t.iloc[j]).pvalue for i, j in pairs])
    bon = pairwise_pvalues(t, test="t-bonferroni")
    holm = pairwise_pvalues(t, test="t-holm")
    exp_holm = multipletests(raw, method="holm")[1]
    for k, (i, j) in enumerate(pairs):
        assert abs(bon.iloc[i, j] - min(1, raw[k] * len(pairs))) < 1e-12
        assert abs(bon.iloc[j, i] - bon.iloc[i, j]) == 0
        assert abs(holm.iloc[i, j] - exp_holm[k]) < 1e-12


def test_unpaired_matches_ttest_ind():
    t = rand_table(S=6, n=10, seed=7)
    p = pairwise_pvalues(t, test="pairwise-t-unpaired")
    for i, j in itertools.combinations(range(6), 2):
        assert abs(p.iloc[i, j] - stats.ttest_ind(t.iloc[i], t.iloc[j], equal_var=True).pvalue) < 1e-12


def test_zero_variance_convention():
    t = table([[.5, .6, .7], [.5, .6, .7], [.25, .35, .45]])
    for test in ("t-bonferroni", "t-holm", "bootstrap"):
        p = pairwise_pvalues(t, test=test)
        assert p.iloc[0, 1] == 1.0      # identical systems
        assert p.iloc[0, 2] == 0.0      # constant non-zero difference


def test_preference_table_t_is_one_sample_t():
    rng = np.random.default_rng(3)
    names = list("ABCDE")
    rows, idx = [], []
    for a, b in itertools.combinations(names, 2):
        rows.append(rng.uniform(-1, 1, 8)); idx.append((a, b))
    pref = pd.DataFrame(rows, index=pd.MultiIndex.from_tuples(idx, names=["a", "b"]),
                        columns=[f"q{j}" for j in range(8)])
    p = pairwise_pvalues(pref, test="t-bonferroni")
    for k, (a, b) in enumerate(idx):
        exp = min(1, stats.ttest_1samp(rows[k], 0).pvalue * 10)
        assert abs(p.loc[a, b] - exp) < 1e-12
    # reversed rows only: antisymmetric completion gives the same p-values
    rev = pd.DataFrame(-np.array(rows), index=pd.MultiIndex.from_tuples([(b, a) for a, b in idx]),
                       columns=pref.columns)
    p2 = pairwise_pvalues(rev, test="t-bonferroni")
    assert np.allclose(p2.loc[names, names].fillna(-1), p.loc[names, names].fillna(-1), atol=1e-12)
    with pytest.raises(ValueError, match="per-system scores"):
        pairwise_pvalues(pref, test="tukey")
    with pytest.raises(ValueError, match="lacks the pair"):
        pairwise_pvalues(pref.iloc[1:], test="t-bonferroni")
    with pytest.raises(ValueError, match=r"\('A', 'B'\) more than once"):
        pairwise_pvalues(pd.concat([pref, pref.iloc[:1]]), test="t-bonferroni")


# --------------------------------------------------------------------------- Tukey HSD

def test_anova_residual_ms_matches_statsmodels():
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm
    t = rand_table(S=6, n=7, seed=8)
    long = t.stack().rename("score").reset_index()
    fit = smf.ols("score ~ C(system) + C(query)", data=long).fit()
    aov = anova_lm(fit)
    mse, df = meta.anova_residual_ms(t.to_numpy())
    assert abs(mse - aov.loc["Residual", "mean_sq"]) < 1e-12
    assert df == aov.loc["Residual", "df"]


def test_tukey_pvalues_match_scipy_studentized_range():
    "End to end from independent pieces: statsmodels' two-way ANOVA residual MS and scipy's studentized range."
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm
    t = rand_table(S=5, n=8, seed=9)
    X = t.to_numpy()
    aov = anova_lm(smf.ols("score ~ C(system) + C(query)", data=t.stack().rename("score").reset_index()).fit())
    mse, df = aov.loc["Residual", "mean_sq"], aov.loc["Residual", "df"]
    m = X.mean(1)
    p = pairwise_pvalues(t, test="tukey")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, j in itertools.combinations(range(5), 2):
            q = abs(m[i] - m[j]) / math.sqrt(mse / 8)
            assert abs(p.iloc[i, j] - stats.studentized_range.sf(q, 5, df)) < 1e-8


@pytest.mark.parametrize("k,df", [(2, 3), (3, 10), (10, 9), (30, 200), (143, 4118), (20, 1)])
def test_studentized_range_sf_matches_scipy(k, df):
    q = np.array([0.05, 0.7, 1.5, 2.5, 3.5, 4.5, 6.0, 9.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exp = stats.studentized_range.sf(q, k, df)
    assert np.max(np.abs(meta.studentized_range_sf(q, k, df) - exp)) < 1e-8


def test_tukey_on_two_groups_equals_unpaired_t_with_its_own_df():
    "Sanity of R10's remark: q = sqrt(2)|t| for the one-way two-group case (scipy tukey_hsd vs ttest_ind)."
    rng = np.random.default_rng(0)
    a, b = rng.random(10), rng.random(10)
    assert abs(stats.tukey_hsd(a, b).pvalue[0, 1] - stats.ttest_ind(a, b).pvalue) < 1e-9


# --------------------------------------------------------------------------- randomized Tukey HSD

def randomized_tukey_loop(X, B, seed):
    "Carterette (2012), one trial and one topic at a time, same rng calls as the library."
    S, n = X.shape
    rng = np.random.default_rng(seed)
    ranges = []
    for _ in range(B):
        keys = rng.random((n, S))
        M = np.zeros(S)
        for q in range(n):
            perm = np.argsort(keys[q])
            M += X[perm, q]
        M /= n
        ranges.append(M.max() - M.min())
    ranges = np.array(ranges)
    m = X.mean(1)
    p = np.full((S, S), np.nan)
    for i, j in itertools.combinations(range(S), 2):
        p[i, j] = p[j, i] = np.mean(ranges >= abs(m[i] - m[j]) - 1e-12)
    return p


def test_randomized_tukey_matches_loop_reference_exactly():
    t = rand_table(S=5, n=6, seed=11)
    got = pairwise_pvalues(t, test="randomized-tukey", B=250, seed=4).to_numpy()
    exp = randomized_tukey_loop(t.to_numpy(), 250, 4)
    assert np.array_equal(np.nan_to_num(got, nan=-1), np.nan_to_num(exp, nan=-1))


def test_randomized_tukey_converges_to_exact_permutation_test():
    "An oracle that shares no random stream: all (3!)^4 within-topic relabellings of a 3 x 4 table, enumerated."
    t = table([[.9, .7, .8, .6], [.5, .6, .2, .4], [.3, .1, .35, .5]])
    X = t.to_numpy()
    perms = list(itertools.permutations(range(3)))
    ranges = []
    for combo in itertools.product(perms, repeat=4):
        M = np.mean([X[list(p), q] for q, p in enumerate(combo)], axis=0)
        ranges.append(M.max() - M.min())
    ranges = np.array(ranges)
    m = X.mean(1)
    got = pairwise_pvalues(t, test="randomized-tukey", B=20000, seed=0)
    for i, j in itertools.combinations(range(3), 2):
        exact = np.mean(ranges >= abs(m[i] - m[j]) - 1e-12)
        assert abs(got.iloc[i, j] - exact) < 0.015, (i, j, got.iloc[i, j], exact)   # sd of the estimate <= 0.0036


def test_randomized_tukey_seed_determinism():
    t = rand_table(S=6, n=8, seed=12)
    a = pairwise_pvalues(t, test="randomized-tukey", B=200, seed=1)
    b = pairwise_pvalues(t, test="randomized-tukey", B=200, seed=1)
    c = pairwise_pvalues(t, test="randomized-tukey", B=200, seed=2)
    assert a.equals(b) and not a.equals(c)


def randomized_pref_loop(P, B, seed):
    "SPEC §3.5 item 4 literally: relabel systems per topic, max over pairs of |mean D|."
    n, S, _ = P.shape
    rng = np.random.default_rng(seed)
    stat = []
    for _ in range(B):
        keys = rng.random((n, S))
        M = np.zeros((S, S))
        for q in range(n):
            sig = np.argsort(keys[q])
            for a in range(S):
                for b in range(S):
                    M[a, b] += P[q, sig[a], sig[b]]
        stat.append(np.abs(M / n).max())
    stat = np.array(stat)
    obs = np.abs(P.mean(0))
    p = np.full((S, S), np.nan)
    for a, b in itertools.combinations(range(S), 2):
        p[a, b] = p[b, a] = np.mean(stat >= obs[a, b] - 1e-12)
    return p


def test_randomized_tukey_preference_matches_loop_reference():
    rng = np.random.default_rng(5)
    S, n = 4, 5
    P = np.zeros((n, S, S))
    for a, b in itertools.combinations(range(S), 2):
        v = rng.uniform(-1, 1, n)
        P[:, a, b], P[:, b, a] = v, -v
    _assert_pref_hsd_matches_loop(P, list("ABCD"), B=120, seed=9)


def _assert_pref_hsd_matches_loop(P, names, *, B, seed, ordered=False):
    """The preference table of the (topics, S, S) tensor P: its randomized HSD p-values equal the literal loop's.
    ordered: one row per ordered pair (a, b), a != b, so that P need not be antisymmetric; else one row per a < b."""
    S = P.shape[1]
    idx = list(itertools.permutations(range(S), 2) if ordered else itertools.combinations(range(S), 2))
    pref = pd.DataFrame([P[:, a, b] for a, b in idx],
                        index=pd.MultiIndex.from_tuples([(names[a], names[b]) for a, b in idx]),
                        columns=[f"q{j}" for j in range(P.shape[0])])
    got = pairwise_pvalues(pref, test="randomized-tukey", B=B, seed=seed).to_numpy()
    exp = randomized_pref_loop(P, B, seed)
    assert np.array_equal(np.nan_to_num(got, nan=-1), np.nan_to_num(exp, nan=-1))


def _antisymmetric(S, n, draw):
    P = np.zeros((n, S, S))
    for a, b in itertools.combinations(range(S), 2):
        v = draw(n)
        P[:, a, b], P[:, b, a] = v, -v
    return P


@pytest.mark.parametrize("real", [False, True])   # grades of ±1/2 and ±1 (with ties of the maximum), or uniform reals
@pytest.mark.parametrize("S", [2, 3, 33, 60])     # even and odd S (the kernel's pairs (i, i + d mod S)); 60: a block < a chunk
def test_randomized_tukey_preference_matches_loop_reference_many_systems(S, real):
    rng = np.random.default_rng(S)
    draw = (lambda n: rng.uniform(-1, 1, n)) if real else (lambda n: rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], n))
    _assert_pref_hsd_matches_loop(_antisymmetric(S, 3, draw), [f"s{k:02d}" for k in range(S)], B=40, seed=3)


def test_randomized_tukey_preference_blocks_within_and_across_chunks():
    "60 systems, 3 topics: blocks of 72 trials, so the first chunk of 100 trials is split in two."
    rng = np.random.default_rng(60)
    P = _antisymmetric(60, 3, lambda n: rng.uniform(-1, 1, n))
    _assert_pref_hsd_matches_loop(P, [f"s{k:02d}" for k in range(60)], B=150, seed=4)


@pytest.mark.parametrize("cells", [1, 7, 24, 1 << 30])   # blocks of 1 trial, of 1 or 2, of 2 or 3 trials, and one whole chunk
def test_randomized_tukey_preference_block_size_does_not_change_pvalues(cells, monkeypatch):
    monkeypatch.setattr(meta, "_CELLS", cells)
    rng = np.random.default_rng(11)
    for S in (4, 5):
        _assert_pref_hsd_matches_loop(_antisymmetric(S, 6, lambda n: rng.uniform(-1, 1, n)), list("ABCDE")[:S], B=230, seed=2)
        P = rng.uniform(-1, 1, (6, S, S))
        P[:, np.arange(S), np.arange(S)] = 0.0
        _assert_pref_hsd_matches_loop(P, list("ABCDE")[:S], B=230, seed=2, ordered=True)


@pytest.mark.parametrize("S", [2, 3, 33])
def test_randomized_tukey_preference_not_antisymmetric(S):
    "(a, b) and (b, a) given with unrelated values: the maximum runs over all S × S entries, as in the literal loop."
    rng = np.random.default_rng(100 + S)
    P = rng.choice([-1.0, -0.25, 0.0, 0.5, 1.0], (4, S, S))
    P[:, np.arange(S), np.arange(S)] = 0.0
    assert not np.array_equal(P, -P.transpose(0, 2, 1))
    _assert_pref_hsd_matches_loop(P, [f"s{k:02d}" for k in range(S)], B=60, seed=5, ordered=True)
    Q = _antisymmetric(S, 4, lambda n: rng.uniform(-1, 1, n))
    Q[2, 0, 1] += 0.75                                # antisymmetric but for one entry
    _assert_pref_hsd_matches_loop(Q, [f"s{k:02d}" for k in range(S)], B=60, seed=5, ordered=True)


# --------------------------------------------------------------------------- bootstrap

def bootstrap_loop(x, y, B, seed, n):
    "Sakai (2006) Fig. 1 for one pair, using the library's shared topic resamples."
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(B, n))
    z = np.asarray(x) - np.asarray(y)
    t_obs = abs(z.mean() / (z.std(ddof=1) / math.sqrt(n)))
    w = z - z.mean()
    count = 0
    for b in range(B):
        wb = w[idx[b]]
        tb = abs(wb.mean() / (wb.std(ddof=1) / math.sqrt(n)))
        count += tb >= t_obs * (1 - 1e-12)
    return count / B


def test_bootstrap_matches_loop_reference():
    t = rand_table(S=4, n=10, seed=13)
    p = pairwise_pvalues(t, test="bootstrap", B=300, seed=2)
    for i, j in itertools.combinations(range(4), 2):
        assert p.iloc[i, j] == bootstrap_loop(t.iloc[i], t.iloc[j], 300, 2, 10)


def test_bootstrap_sanity_and_determinism():
    rng = np.random.default_rng(0)
    base = rng.random(25)
    t = table([base, base, base + 0.5 + 0.01 * rng.random(25)])
    p = pairwise_pvalues(t, test="bootstrap", B=1000, seed=0)
    assert p.iloc[0, 1] == 1.0
    assert p.iloc[0, 2] < 0.01
    t2 = rand_table(S=5, n=20, seed=1)
    assert pairwise_pvalues(t2, test="bootstrap", seed=5).equals(pairwise_pvalues(t2, test="bootstrap", seed=5))


def test_discriminative_power_counts():
    t = rand_table(S=6, n=10, seed=3)
    r = discriminative_power(t, test="t-holm", alpha=0.2)
    pv = r.pvalues.to_numpy()[np.triu_indices(6, 1)]
    assert r.count == int((pv < 0.2).sum()) and r.n_pairs == 15
    assert abs(r.fraction - r.count / 15) < 1e-15
    assert r.count_at(0.5) == int((pv < 0.5).sum())
    assert len(r.pairs()) == 15
    with pytest.raises(ValueError, match="test must be"):
        discriminative_power(t, test="wilcoxon")
    bad = t.copy(); bad.iloc[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        discriminative_power(bad, test="t-holm")


# --------------------------------------------------------------------------- stability

def stability_loop(X, trials, seed, f, T, relative=False):
    S, n = X.shape
    rng = np.random.default_rng(seed)
    keys = rng.random((trials, n))
    wins = np.zeros((S, S))
    for r in range(trials):
        sel = np.argsort(keys[r])[:T]
        m = X[:, sel].mean(1)
        for a, b in itertools.permutations(range(S), 2):
            band = f * max(abs(m[a]), abs(m[b])) if relative else f
            if m[a] - m[b] > band: wins[a, b] += 1
    vals = [max(wins[a, b], wins[b, a]) / trials for a, b in itertools.combinations(range(S), 2)]
    return float(np.mean(vals))


@pytest.mark.parametrize("f", [0.0, 0.05])
def test_stability_matches_loop(f):
    t = rand_table(S=6, n=10, seed=21)
    assert abs(stability(t, trials=200, seed=3, fuzziness=f) - stability_loop(t.to_numpy(), 200, 3, f, 5)) < 1e-12


@pytest.mark.parametrize("f", [0.0, 0.05, 0.2])
def test_stability_relative_matches_loop(f):
    t = rand_table(S=6, n=10, seed=22)
    assert abs(stability(t, trials=200, seed=4, fuzziness=f, relative=True)
               - stability_loop(t.to_numpy(), 200, 4, f, 5, relative=True)) < 1e-12


def test_stability_relative_hand_case():
    "Buckley & Voorhees: |a - b| <= f·max(a, b) is a tie; the band scales with the scores, the absolute one does not."
    t = table([[.8, .6], [.7, .66]])           # means 0.7 and 0.68: gap 0.02
    # relative f = 0.05: band 0.035 > 0.02, a tie; f = 0.025: band 0.0175 < 0.02, the first system wins every trial
    assert stability(t, trials=20, seed=0, topics=2, fuzziness=0.05, relative=True) == 0.0
    assert stability(t, trials=20, seed=0, topics=2, fuzziness=0.025, relative=True) == 1.0
    assert stability(t, trials=20, seed=0, topics=2, fuzziness=0.025) == 0.0        # absolute band 0.025 > 0.02
    big = table(t.to_numpy() * 100)            # gap 2, band 3.5 relative; absolute 0.05 is far below
    assert stability(big, trials=20, seed=0, topics=2, fuzziness=0.05, relative=True) == 0.0
    assert stability(big, trials=20, seed=0, topics=2, fuzziness=0.05) == 1.0
    low = table([[.8, .6], [.7, .66]], hib=False)   # lower is better: the band uses the magnitudes
    assert stability(low, trials=20, seed=0, topics=2, fuzziness=0.025, relative=True) == 1.0


def test_stability_hand_cases():
    t = table([[3, 3, 3], [0, 0, 0], [1, 2, 3], [2, 2, 2]])
    # pair (c, d): topic pairs {0,1}: 1.5 vs 2 (d), {0,2}: 2 vs 2 (tie), {1,2}: 2.5 vs 2 (c)
    det = stability(t, trials=500, seed=0, topics=2, detail=True).pairs
    row = det[(det.a == "s02") & (det.b == "s03")].iloc[0]
    assert row.wins_a + row.wins_b + row.ties == 500
    assert row.stability == max(row.wins_a, row.wins_b) / 500
    ab = det[(det.a == "s00") & (det.b == "s01")].iloc[0]
    assert ab.stability == 1.0 and ab.wins_a == 500
    # fuzziness 0.6 turns every (c, d) comparison into a tie
    det = stability(t, trials=500, seed=0, topics=2, fuzziness=0.6, detail=True).pairs
    assert det[(det.a == "s02") & (det.b == "s03")].iloc[0].stability == 0.0


def test_stability_gap_equal_to_fuzziness_is_a_tie():
    "The authors' rule |Δ| <= f is a tie; float noise must not turn an exact gap of f into a win."
    t = table([[.65, .35], [.6, .3]])          # gaps 0.65 - 0.6 = 0.05000000000000004, 0.35 - 0.3 = 0.04999999999999999
    assert .65 - .6 > .05 and .35 - .3 < .05
    det = stability(t, trials=50, seed=0, topics=1, fuzziness=0.05, detail=True).pairs
    assert det.ties.iloc[0] == 50 and det.stability.iloc[0] == 0.0
    assert stability(t, trials=50, seed=0, topics=1, fuzziness=0.0499) == 1.0


def test_stability_seed_determinism():
    t = rand_table(S=9, n=12, seed=4)
    assert stability(t, trials=300, seed=7) == stability(t, trials=300, seed=7)
    a = stability(t, trials=300, seed=7, detail=True).pairs
    b = stability(t, trials=300, seed=8, detail=True).pairs
    assert not a.equals(b)


def test_stability_lower_is_better_swaps_winners_only():
    t = rand_table(S=5, n=8, seed=2)
    low = table(-t.to_numpy(), hib=False)
    r1, r2 = stability(t, trials=100, detail=True), stability(low, trials=100, detail=True)
    assert r1.value == r2.value
    # the direction does not matter: a pair's majority share is the same both ways (wins swap sides)
    assert (r1.pairs.wins_a.to_numpy() == r2.pairs.wins_b.to_numpy()).all()
    assert (r1.pairs.stability.to_numpy() == r2.pairs.stability.to_numpy()).all()


# --------------------------------------------------------------------------- degradation and Algorithm 1

def toy_campaign(S=6, Q=4, D=12, seed=0):
    rng = np.random.default_rng(seed)
    docs = [f"d{i:03d}" for i in range(40)]
    runs = []
    for s in range(S):
        for q in range(Q):
            for r, d in enumerate(rng.choice(docs, D, replace=False)):
                runs.append((f"sys{s}", str(q + 1), d, float(D - r)))
    qrels = []
    for q in range(Q):
        for d in rng.choice(docs, 25, replace=False):
            qrels.append((str(q + 1), d, int(rng.integers(0, 3))))
    return prepare(pd.DataFrame(runs, columns=["system", "query", "doc", "score"]),
                   pd.DataFrame(qrels, columns=["query", "doc", "grade"]))


def precision_table(c, k=10):
    rel = c.relevant(1)[:, :, :k].sum(2) / k
    return c.score_table(rel, f"P@{k}")


def recall_table(c):
    nrel = c.n_relevant(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        vals = c.relevant(1).sum(2) / np.where(nrel > 0, nrel, 1)
    return c.score_table(vals, "R")


def test_drop_judgments_equals_with_qrels():
    c = toy_campaign()
    d = drop_judgments(c, 0.4, seed=3)
    # an independent route: the reduced qrels re-encoded from the runs
    kept = d.qrels[["query", "doc", "grade"]]
    e = c.with_qrels(kept)
    assert np.array_equal(d.grades, e.grades)
    assert np.array_equal(d.n_relevant(1), e.n_relevant(1))
    # max(1, floor(0.4 m_q)) relevant judgments kept per topic; all non-relevant judgments kept
    m = c.n_relevant(1)
    assert np.array_equal(d.n_relevant(1), np.maximum(1, np.floor(0.4 * m + 1e-9)).astype(int) * (m > 0))
    assert ((c.qrels.grade < 1).sum()) == ((d.qrels.grade < 1).sum())
    pd.testing.assert_frame_equal(recall_table(d), recall_table(e))


def test_judgment_degradation_full_fraction_is_identity():
    c = toy_campaign()
    out = judgment_degradation(c, lambda x: {"P@10": precision_table(x), "R": recall_table(x)},
                               fractions=(0.5, 1.0), trials=3)
    assert set(out.measure) == {"P@10", "R"} and len(out) == 12
    assert np.allclose(out[out.fraction == 1.0].tau, 1.0, atol=1e-12)
    assert np.allclose(out[out.fraction == 1.0].tau_ap, 1.0, atol=1e-12)


def test_topic_degradation():
    t = rand_table(S=8, n=10, seed=1)
    out = topic_degradation({"a": t}, ks=(2, 10), trials=4)
    assert np.allclose(out[out.k == 10].tau, 1.0, atol=1e-12) and np.allclose(out[out.k == 10].tau_ap, 1.0, atol=1e-12)
    perm = np.random.default_rng(2).permutation(10)
    sub = t.iloc[:, sorted(perm[:2])]
    row = out[(out.k == 2) & (out.trial == 2)].iloc[0]
    assert abs(row.tau - kendall_tau(t, sub)) < 1e-12
    with pytest.raises(ValueError, match="ks"):
        topic_degradation(t, ks=(11,))


def test_system_sampling_counts_and_subsets():
    c = toy_campaign(S=6)
    seen = []
    def measure(sub):
        seen.append(len(sub.systems))
        return precision_table(sub)
    out = system_sampling(c, measure, sizes=(2, 4), trials=15, seed=0)
    assert seen[0] == 6 and sorted(set(seen[1:])) == [2, 4]
    # P@10 does not depend on the other systems: every defined tau is 1
    assert np.allclose(out.mean_tau.dropna(), 1.0, atol=1e-12)
    full = precision_table(c).mean(axis=1)
    rng = np.random.default_rng(0)
    ties = 0
    for _ in range(15):
        idx = np.sort(rng.choice(6, 2, replace=False))
        ties += full.iloc[idx[0]] == full.iloc[idx[1]]
    assert out.excluded.iloc[0] == ties and out.trials.iloc[0] == 15


def p_rareness_loop(c, k=3, alpha=1.0):
    "P@k_R at full depth (rareness paper R4), by plain Python loops over the campaign's runs: S_d counted in this campaign."
    runs = c.runs.sort_values(["system", "query", "rank"])
    lists = {key: list(g.doc) for key, g in runs.groupby(["system", "query"])}
    relevant = {(q, d) for q, d, g in c.qrels[["query", "doc", "grade"]].itertuples(index=False) if g >= 1}
    S = len(c.systems)
    S_d = {}
    for (s, q), docs in lists.items():
        for d in set(docs): S_d[q, d] = S_d.get((q, d), 0) + 1
    vals = [[sum(1 + alpha * (1 - S_d[q, d] / S) for d in lists.get((s, q), [])[:k] if (q, d) in relevant) / k
             for q in c.topics] for s in c.systems]
    return c.score_table(np.array(vals), f"P@{k}_R")


def example_d():
    lists = {"S": "d a e b n1", "T": "e c n2 n3", "U": "a c b", "V": "n4 e n5 d"}
    runs = pd.DataFrame([(s, "q1", d, float(10 - r)) for s, l in lists.items() for r, d in enumerate(l.split())],
                        columns=["system", "query", "doc", "score"])
    return prepare(runs, pd.DataFrame([("q1", d, 1) for d in "abcde"], columns=["query", "doc", "grade"]))


def test_example_d_algorithm1_exhaustive():
    "SPEC §1.7 Example D: mean τ 2/3 over the six pairs, 5/6 over the four triples (P@3_R, α = 1)."
    c = example_d()
    np.testing.assert_allclose(p_rareness_loop(c).mean(axis=1), [17 / 12, 11 / 12, 3 / 2, 5 / 12], atol=1e-12)
    res = system_sampling(c, p_rareness_loop, sizes=(2, 3), exhaustive=True, detail=True)
    out, det = res.summary, res.taus
    np.testing.assert_allclose(out.mean_tau, [2 / 3, 5 / 6], atol=1e-12)
    assert out.trials.tolist() == [6, 4] and out.excluded.tolist() == [0, 0]
    # per subset, in itertools.combinations order: {S, U} (index 1) is the one reversed pair; {S, T, U} gives 1/3
    np.testing.assert_allclose(det[det.N == 2].tau, [1, -1, 1, 1, 1, 1], atol=1e-12)
    np.testing.assert_allclose(det[det.N == 3].tau, [1 / 3, 1, 1, 1], atol=1e-12)


def test_algorithm1_random_draws_follow_the_documented_stream():
    "1,000 random trials (the paper's count): trial i of size N is sort(rng.choice(S, N, replace=False))."
    c = example_d()
    res = system_sampling(c, p_rareness_loop, sizes=(2,), trials=1000, seed=5, detail=True)
    out, det = res.summary, res.taus
    rng = np.random.default_rng(5)
    reversed_pair = [tuple(np.sort(rng.choice(4, 2, replace=False))) == (0, 2) for _ in range(1000)]
    np.testing.assert_array_equal(det.tau.to_numpy(), np.where(reversed_pair, -1.0, 1.0))
    assert out.trials.iloc[0] == 1000 and out.excluded.iloc[0] == 0
    assert abs(out.mean_tau.iloc[0] - (1 - 2 * np.mean(reversed_pair))) < 1e-12
    with pytest.raises(ValueError, match="trials"):
        system_sampling(c, p_rareness_loop, sizes=(2,), trials=0)
    with pytest.raises(ValueError, match="sizes"):
        system_sampling(c, p_rareness_loop, sizes=(5,))
    with pytest.raises(ValueError, match="exhaustive"):
        system_sampling(toy_campaign(S=30), precision_table, sizes=(10,), exhaustive=True)


def test_progress_bars_are_quiet_under_tests(capfd):
    c = toy_campaign()
    system_sampling(c, precision_table, sizes=(2,), trials=5)
    topic_degradation(rand_table(), ks=(2,), trials=3)
    judgment_degradation(c, precision_table, fractions=(0.5,), trials=2)
    assert capfd.readouterr().err == ""


# --------------------------------------------------------------------------- properties
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays


tables_st = arrays(np.float64, st.tuples(st.integers(3, 6), st.integers(3, 8)),
                   elements=st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 1.0]))


@settings(max_examples=40, deadline=None)
@given(tables_st)
def test_properties_of_pvalues(X):
    t = table(X)
    bon, holm = pairwise_pvalues(t, test="t-bonferroni").to_numpy(), pairwise_pvalues(t, test="t-holm").to_numpy()
    iu = np.triu_indices(len(X), 1)
    assert (holm[iu] <= bon[iu] + 1e-15).all()
    assert ((bon[iu] >= 0) & (bon[iu] <= 1)).all()
    # randomized HSD: a larger |mean difference| never gets a larger p-value
    p = pairwise_pvalues(t, test="randomized-tukey", B=50, seed=0).to_numpy()[iu]
    d = np.abs(X.mean(1)[iu[0]] - X.mean(1)[iu[1]])
    o = np.argsort(d, kind="stable")
    assert (np.diff(p[o])[np.diff(d[o]) > 1e-9] <= 1e-15).all()
    assert all(0 <= v <= 1 for v in p)


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, 6, elements=st.integers(0, 3).map(float)),
       arrays(np.float64, 6, elements=st.integers(0, 3).map(float)))
def test_properties_of_tau_ap(x, y):
    a, b = pd.Series(x, index=list("abcdef")), pd.Series(y, index=list("abcdef"))
    v = tau_ap(a, b)
    if len(set(y)) > 1:
        assert -1 - 1e-12 <= v <= 1 + 1e-12
        assert abs(tau_ap(b, b) - 1) < 1e-12


def test_orientation_rule_on_every_direction_dependent_function():
    "attrs saying lower is better are refused without higher_is_better=; a plain vector is higher-is-better."
    t = rand_table(S=6, n=8, seed=3)
    low = table(-t.to_numpy(), hib=False)
    with pytest.raises(ValueError, match="pass higher_is_better="):
        system_scores(low, oriented=True)
    with pytest.raises(ValueError, match="pass higher_is_better="):
        tau_ap(t, low)
    with pytest.raises(ValueError, match="pass higher_is_better="):
        compare_orderings({"t": t, "low": low})
    with pytest.raises(ValueError, match="pass higher_is_better="):
        topic_degradation({"low": low}, ks=(2,), trials=1)
    m = compare_orderings({"t": t, "low": low}, higher_is_better={"low": False})
    assert abs(m.loc["t", ("tau", "low")] - 1) < 1e-12 and abs(m.loc["t", ("tau_ap", "low")] - 1) < 1e-12
    a = topic_degradation({"x": t}, ks=(2, 4), trials=3)
    b = topic_degradation({"x": low}, ks=(2, 4), trials=3, higher_is_better=False)
    assert a[["tau", "tau_ap"]].equals(b[["tau", "tau_ap"]])
    # plain vectors: matched by position, higher is better
    assert kendall_tau(np.array([3., 2, 1]), [1., 2, 3]) == -1.0
    with pytest.raises(TypeError, match="True, False or None"):
        kendall_tau(t, t, higher_is_better="yes")
    # the direction-free functions give the same answer both ways
    assert stability(t, trials=50) == stability(low, trials=50)
    assert pairwise_pvalues(t, test="t-holm").equals(pairwise_pvalues(low, test="t-holm"))
