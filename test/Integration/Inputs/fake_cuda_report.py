"""Summarises the call reports of the CUDA stand-in (ZB_FAKE_CUDA_REPORT=PREFIX
writes PREFIX.rank<R>, unittests/Runtime/FakeCuda.cpp) for FileCheck.

Usage: fake_cuda_report.py PREFIX.rank0 [PREFIX.rank1 ...]
Prints per rank: the world ranks it sent NCCL messages to, whether receives
were deferred behind their stream and waited for, and the counts that must
be zero (work dropped at teardown, host pointers handed to the "GPU").
"""
import sys


def main(paths):
    for path in paths:
        counts, sends_to = {}, {}
        with open(path) as f:
            for line in f:
                fields = line.split()
                if fields[0] == "nccl_sends_to":
                    sends_to[int(fields[1])] = int(fields[2])
                elif len(fields) == 2:
                    counts[fields[0]] = int(fields[1])
        rank = path.rsplit(".rank", 1)[1]
        peers = ",".join(str(p) for p in sorted(sends_to) if sends_to[p] > 0)
        print(f"rank {rank}: NCCL sends to [{peers}]; "
              f"deferred receives {counts['deferred_recvs'] > 0}, "
              f"flushing waits {counts['flushing_waits'] > 0}; "
              f"dropped {counts['dropped_ops']}, "
              f"bad pointers {counts['bad_pointers']}")


if __name__ == "__main__":
    main(sys.argv[1:])
