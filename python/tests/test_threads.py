"""The GIL is released while the library reads, inflates and parses: two
Python threads over a zoo finish in at most 1/1.6 of one thread's time.

Timing on a shared 2-core machine is noisy: one- and two-thread runs are
interleaved over 7 rounds and their medians compared; when other work holds
a core, the measurement is taken again after a pause, up to 5 times, and
the best attempt counts. Code that kept the GIL could not pass any attempt (two threads
would take as long as one). The bar can be changed with
NEFF_THREAD_SPEEDUP_MIN."""

import os
import statistics
import threading
import time

import neff
from conftest import make_zoo

MIN_SPEEDUP = float(os.environ.get("NEFF_THREAD_SPEEDUP_MIN", "1.6"))


def work(paths):
    for p in paths:
        with neff.open(p) as n:
            n.get_json("def")
            n.cc_world_size()
            n.num_cores()


def timed(paths, threads):
    parts = [paths[i::threads] for i in range(threads)]
    ts = [threading.Thread(target=work, args=(part,)) for part in parts]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return time.perf_counter() - t0


def test_two_threads_over_a_zoo_run_at_least_1_6x_one_thread(tmp_path):
    if (os.cpu_count() or 1) < 2:
        raise AssertionError("this test needs 2 CPUs")
    paths = make_zoo(str(tmp_path), 8, def_mib=2)
    work(paths)  # warm the page cache
    attempts = []
    for attempt in range(5):
        if attempt:
            time.sleep(5)
        one, two = [], []
        for _ in range(7):
            one.append(timed(paths, 1))
            two.append(timed(paths, 2))
        speedup = statistics.median(one) / statistics.median(two)
        attempts.append(speedup)
        print(
            "1 thread %.4f s, 2 threads %.4f s (medians of 7): %.2fx"
            % (statistics.median(one), statistics.median(two), speedup)
        )
        if speedup >= MIN_SPEEDUP:
            break
    assert max(attempts) >= MIN_SPEEDUP, attempts
