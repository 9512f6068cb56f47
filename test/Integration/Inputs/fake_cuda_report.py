"""Summarises the call reports of the CUDA stand-in (ZB_FAKE_CUDA_REPORT=PREFIX
writes PREFIX.rank<R>, unittests/Runtime/FakeCuda.cpp) for FileCheck.

Usage: fake_cuda_report.py PREFIX.rank0 [PREFIX.rank1 ...]
Prints per rank: the world ranks it sent NCCL messages to, whether receives
were deferred behind their stream and waited for, and the counts that must
be zero (work dropped at teardown, host pointers handed to the "GPU").

       fake_cuda_report.py --same-allocations A.rank0 B.rank0 [A.rank1 B.rank1 ...]
Prints per pair of reports (the same rank, runs A and B of different step
counts) whether they made the same cuMemAlloc and cuMemAllocManaged calls
(no device allocation in a steady-state step), with the counts.
"""
import sys


def read(path):
    counts, sends_to = {}, {}
    with open(path) as f:
        for line in f:
            fields = line.split()
            if fields[0] == "nccl_sends_to":
                sends_to[int(fields[1])] = int(fields[2])
            elif len(fields) == 2:
                counts[fields[0]] = int(fields[1])
    return counts, sends_to


def same_allocations(paths):
    for a, b in zip(paths[0::2], paths[1::2]):
        ca, _ = read(a)
        cb, _ = read(b)
        keys = ("allocations", "managed_allocations")
        same = all(ca[k] == cb[k] for k in keys)
        rank = a.rsplit(".rank", 1)[1]
        print(f"rank {rank}: same device allocations: {'yes' if same else 'no'} "
              f"(cuMemAlloc {ca['allocations']} / {cb['allocations']}, "
              f"managed {ca['managed_allocations']} / "
              f"{cb['managed_allocations']})")


def main(paths):
    if paths and paths[0] == "--same-allocations":
        return same_allocations(paths[1:])
    for path in paths:
        counts, sends_to = read(path)
        rank = path.rsplit(".rank", 1)[1]
        peers = ",".join(str(p) for p in sorted(sends_to) if sends_to[p] > 0)
        print(f"rank {rank}: NCCL sends to [{peers}]; "
              f"deferred receives {counts['deferred_recvs'] > 0}, "
              f"flushing waits {counts['flushing_waits'] > 0}; "
              f"dropped {counts['dropped_ops']}, "
              f"bad pointers {counts['bad_pointers']}")


if __name__ == "__main__":
    main(sys.argv[1:])
