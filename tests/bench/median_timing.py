"""The timing of the Python benchmarks: the median wall-clock time of `repeats` calls after one
warm-up (the shared machines are noisy: a median, and ratios taken in the same run)."""
import statistics
import time


def timed(function, repeats):
    function()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
