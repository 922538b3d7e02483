"""What the benchmark scripts share: the best time of a few repetitions (imported as `from timing import best_of`)."""
import time


def best_of(fn, repeat=3):
    "(fastest wall-clock seconds over `repeat` calls of fn(), the last call's result)."
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter(); out = fn(); times.append(time.perf_counter() - t0)
    return min(times), out
