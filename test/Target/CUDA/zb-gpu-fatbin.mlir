// RUN: not zb-opt %s --split-input-file --zb-gpu-fatbin="toolkit=/nonexistent" 2>&1 | FileCheck %s --check-prefix=NOTOOLKIT
// RUN: %if cuda-toolkit %{ not zb-opt %s --split-input-file --zb-gpu-fatbin="toolkit=%cuda_toolkit" > %t.mlir 2> %t.err %}
// RUN: %if cuda-toolkit %{ FileCheck %s --check-prefix=ERR < %t.err %}
// RUN: %if cuda-toolkit %{ FileCheck %s --check-prefix=FATBIN < %t.mlir %}
// RUN: %if cuda-toolkit %{ %python -c "import sys; l = [l for l in open(sys.argv[1]) if 'gpu.binary @two_archs' in l][0]; print('cubins', l.count(chr(92) + '7FELF'))" %t.mlir | FileCheck %s --check-prefix=CUBINS %}

// zb-gpu-fatbin: a gpu.module with one NVVM target per architecture becomes
// a gpu.binary holding one fatbin (format fatbin) with a cubin for each
// architecture and the PTX of the first (zb-compile --gpu-arch
// sm_80,sm_90). The fatbin starts with the magic 0xBA55ED50, little-endian
// "P\EDU\BA" as MLIR prints it, with two ELF cubins in it;
// test/Tools/zb-compile-cuda.test lists the images of a compiled rank with
// the toolkit's own reader.

// FATBIN: gpu.binary @two_archs [#gpu.object<#nvvm.target<chip = "sm_80">, "P\EDU\BA
// CUBINS: cubins 2
// FATBIN-NOT: gpu.module @two_archs
module attributes {gpu.container_module} {
  gpu.module @two_archs [#nvvm.target<chip = "sm_80">, #nvvm.target<chip = "sm_90">] {
    llvm.func @k() attributes {nvvm.kernel} {
      llvm.return
    }
  }
}

// -----

// No target attached: nothing to compile for (checked before the toolkit).
// NOTOOLKIT: error: zb-gpu-fatbin: no target attached
// ERR: error: zb-gpu-fatbin: no target attached
module attributes {gpu.container_module} {
  gpu.module @no_target {
    llvm.func @k() attributes {nvvm.kernel} {
      llvm.return
    }
  }
}

// -----

// The toolkit without bin/fatbinary.
// NOTOOLKIT: error: zb-gpu-fatbin: /nonexistent/bin/fatbinary not found (pass the toolkit root)
module attributes {gpu.container_module} {
  gpu.module @missing_toolkit [#nvvm.target<chip = "sm_90">] {
    llvm.func @k() attributes {nvvm.kernel} {
      llvm.return
    }
  }
}

// -----

// A chip that is not an sm_ architecture: the NVVM target refuses it (the
// cubin's compilation fails), and the module is left as it was.
// ERR: error: {{Minimum NVVM target SM version is sm_20|zb-gpu-fatbin: compiling for compute_90 failed}}
module attributes {gpu.container_module} {
  gpu.module @bad_chip [#nvvm.target<chip = "compute_90">] {
    llvm.func @k() attributes {nvvm.kernel} {
      llvm.return
    }
  }
}
