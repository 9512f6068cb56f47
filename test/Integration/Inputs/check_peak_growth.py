"""Realized vs predicted growth of peak memory with the microbatch count.

Usage: check_peak_growth.py SMALL_PLAN_DIR SMALL_REPORT.json LARGE_PLAN_DIR LARGE_REPORT.json

For each rank, the growth of zb-run's peak heap (memory pool, bytes) from the
small to the large microbatch count must match the growth of the schedule's
predicted peak activation memory (schedule.json peak_memory: the paper's M_B/M_W
accounting, docs/references.md) within 10 % + 16 KiB. Parameters, gradients and
temporaries do not depend on the microbatch count, so they cancel. Prints
one line per rank; exits 1 on a mismatch.
"""
import json
import sys


def load(plan_dir, report):
    with open(plan_dir + "/schedule.json") as f:
        predicted = json.load(f)["peak_memory"]
    with open(report) as f:
        realized = json.load(f)["peak_heap_bytes"]
    return predicted, realized


def main():
    p_small, r_small = load(sys.argv[1], sys.argv[2])
    p_large, r_large = load(sys.argv[3], sys.argv[4])
    ok = True
    for rank, (ps, rs, pl, rl) in enumerate(zip(p_small, r_small, p_large, r_large)):
        predicted, realized = pl - ps, rl - rs
        good = abs(realized - predicted) <= 0.10 * abs(predicted) + 16384
        ok &= good
        print(f"rank {rank}: predicted growth {predicted:.0f} bytes, realized {realized} bytes"
              f" {'ok' if good else 'MISMATCH'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
