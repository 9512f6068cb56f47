# -*- Python -*-
# lit configuration of the zb test suite (test/). Substitutions:
#   zb-opt zb-translate zb-compile zb-run zb-sched   the tools under test
#   FileCheck not count split-file                    LLVM's test tools
#   %python      Debian's python3 (numpy, onnx; torch optional)
#   %examples    the examples/ directory
#   %mpirun      mpirun that works as root and oversubscribes the 2 cores
# Features: mpi, mpi-local-nodes (%mpi_local_node: Open MPI's ssh stand-in
#   for several nodes on this machine), cuda-toolkit (ptxas of the toolkit
#   zb was configured with), sanitizer (a -DZB_SANITIZE build: address-space limits mean nothing there)
import os
import shutil

import lit.formats
from lit.llvm import llvm_config

config.name = "zb"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.zb_obj_root, "test")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.zb_tools_dir, append_path=True)
# One BLAS thread per rank; MPI as root on a 2-core machine.
config.environment["OPENBLAS_NUM_THREADS"] = "1"
config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
config.environment["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
for var in ("OPENBLAS_CORETYPE", "HOME"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

if getattr(config, "zb_sanitize", ""):
    config.available_features.add("sanitizer")

python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
config.substitutions.append(("%python", python))
config.substitutions.append(("%examples", os.path.join(config.zb_src_root, "examples")))
config.substitutions.append(("%zb_src_root", config.zb_src_root))
config.substitutions.append(("%zb_bin", config.zb_tools_dir))
config.substitutions.append(("%zb_lib_dir", os.path.join(config.zb_obj_root, "lib")))

tools = ["zb-opt", "zb-translate", "zb-compile", "zb-run", "zb-sched"]
llvm_config.add_tool_substitutions(tools, [config.zb_tools_dir])
llvm_config.add_tool_substitutions(["FileCheck", "not", "count", "split-file"],
                                   [config.llvm_tools_dir])

# The host-memory stand-in for libcuda/cuBLAS/NCCL (unittests/Runtime/
# FakeCuda.cpp): zb-run --backend cuda without a GPU.
fake_cuda = os.path.join(config.zb_obj_root, "lib", "libzb_fake_cuda.so")
if os.path.exists(fake_cuda):
    config.available_features.add("fake-cuda")
    config.substitutions.append(
        ("%fake_cuda_env", "ZBRT_CUDA_DRIVER={0} ZBRT_CUBLAS={0} ZBRT_NCCL={0}"
         .format(fake_cuda)))

# A usable GPU (driver and device): the GPU integration tests run.
# Probed in a child python: libzbrt.so of a sanitizer build (scripts/
# test-sanitized.sh) aborts a process that did not start with the ASan
# runtime, and must not take lit with it.
def _cuda_device():
    import subprocess
    import sys
    probe = ("import ctypes, sys; z = ctypes.CDLL(sys.argv[1]); "
             "b = ctypes.create_string_buffer(256); "
             "sys.exit(0 if z.zbrt_cuda_available(b, ctypes.c_int64(256)) == 0 "
             "else 1)")
    lib = os.path.join(config.zb_obj_root, "lib", "libzbrt.so")
    try:
        return subprocess.run([sys.executable, "-c", probe, lib],
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL,
                              timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
if _cuda_device():
    config.available_features.add("cuda-device")

if shutil.which("mpirun"):
    config.available_features.add("mpi")
    # Several Open MPI "nodes" on this machine (scripts/mpi-local-node.sh:
    # mpirun's ssh stand-in, a UTS namespace per node).
    import subprocess
    agent = os.path.join(config.zb_src_root, "scripts", "mpi-local-node.sh")
    try:
        if subprocess.run([agent, "--check"], timeout=30).returncode == 0:
            config.available_features.add("mpi-local-nodes")
            config.substitutions.append(("%mpi_local_node", agent))
    except (OSError, subprocess.SubprocessError):
        pass
# --target cuda compiles kernels with the toolkit zb was configured with.
if config.zb_cuda_toolkit and os.path.exists(
        os.path.join(config.zb_cuda_toolkit, "bin", "ptxas")):
    config.available_features.add("cuda-toolkit")
    config.substitutions.append(("%cuda_toolkit", config.zb_cuda_toolkit))
