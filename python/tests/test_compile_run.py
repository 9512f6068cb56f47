"""zb.compile + zb.run of the MLP example against the CLI (zb-compile +
zb-run): the same plan and bit-identical losses; errors as ValueError with
zb-compile's diagnostics."""
import json
import os

import pytest

import zb
from conftest import EXAMPLES, run_tool, tool

MLP = os.path.join(EXAMPLES, "mlp", "mlp.onnx")


def test_compile_and_run_equal_the_cli(tmp_path, mpi_env):
    plan = zb.compile(MLP, tmp_path / "py", stages=2, microbatches=4,
                      schedule="zb-v", memory_limit=[200000, 100000])
    assert plan.ranks == 2
    assert plan.plan["schedule"] == "zb-v"
    run_tool(tool("zb-compile"), MLP, "--stages", 2, "--microbatches", 4,
             "--schedule", "zb-v", "--memory-limit", "200000,100000", "-o",
             tmp_path / "cli", "--quiet")
    with open(tmp_path / "cli" / "plan.json") as f:
        cli_plan = json.load(f)
    assert cli_plan["predicted"] == plan.plan["predicted"]
    with open(tmp_path / "cli" / "params.bin", "rb") as a, \
            open(tmp_path / "py" / "params.bin", "rb") as b:
        assert a.read() == b.read()

    report = zb.run(plan, steps=3, deterministic=True)
    proc = run_tool(tool("zb-run"), tmp_path / "cli", "--ranks", 2,
                    "--steps", 3, "--deterministic", "--report-format",
                    "json")
    cli_losses = [s["loss"] for s in json.loads(proc.stdout)["steps"]]
    assert len(report.losses) == 3
    assert report.losses == cli_losses  # bit-identical
    assert report.losses[-1] < report.losses[0]
    assert "zb-v" in report.raw["predicted"]


def test_compile_errors_carry_the_diagnostic(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(open(MLP, "rb").read()[:300])
    with pytest.raises(ValueError, match="invalid or truncated protobuf"):
        zb.compile(bad, tmp_path / "out")
    with pytest.raises(ValueError, match="--stages must be >= 1"):
        zb.compile(MLP, tmp_path / "out", stages=0)
    with pytest.raises(ValueError, match="cannot cut 14 compute ops into 40"):
        zb.compile(MLP, tmp_path / "out", stages=40)


def test_run_errors_are_value_errors(tmp_path, mpi_env):
    with pytest.raises(ValueError, match="cannot read"):
        zb.run(str(tmp_path / "nowhere"), ranks=1)


def test_bf16_precision_equals_the_cli(tmp_path, mpi_env):
    plan = zb.compile(MLP, tmp_path / "py", stages=2, microbatches=4,
                      precision="bf16")
    assert plan.plan["precision"] == "bf16"
    run_tool(tool("zb-compile"), MLP, "--stages", 2, "--microbatches", 4,
             "--precision", "bf16", "-o", tmp_path / "cli", "--quiet")
    report = zb.run(plan, steps=3, deterministic=True)
    proc = run_tool(tool("zb-run"), tmp_path / "cli", "--ranks", 2,
                    "--steps", 3, "--deterministic", "--report-format",
                    "json")
    assert report.losses == [s["loss"] for s in
                             json.loads(proc.stdout)["steps"]]
    with pytest.raises(ValueError, match="--precision must be fp32 or bf16"):
        zb.compile(MLP, tmp_path / "out", precision="fp16")


def test_data_parallel_with_buckets_equals_the_cli(tmp_path, mpi_env):
    # 2 pipelines of 2 ranks, every group of gradients its own all-reduce
    # bucket (zb-cluster-weight-gradients): the plan, the parameters and
    # the losses of the CLI's plan; zb.run takes D x P ranks by itself.
    plan = zb.compile(MLP, tmp_path / "py", stages=2, microbatches=4,
                      data_parallel=2, dp_bucket_bytes=0)
    assert plan.ranks == 4
    assert plan.plan["data_parallel"] == 2
    with open(tmp_path / "py" / "pipeline.mlir") as f:
        assert "zb.weight_clusters" in f.read()
    run_tool(tool("zb-compile"), MLP, "--stages", 2, "--microbatches", 4,
             "--data-parallel", 2, "--dp-bucket-bytes", 0, "-o",
             tmp_path / "cli", "--quiet")
    with open(tmp_path / "cli" / "plan.json") as f:
        assert json.load(f)["predicted"] == plan.plan["predicted"]
    report = zb.run(plan, steps=3, deterministic=True)
    proc = run_tool(tool("zb-run"), tmp_path / "cli", "--ranks", 4,
                    "--steps", 3, "--deterministic", "--report-format",
                    "json")
    assert report.losses == [s["loss"] for s in
                             json.loads(proc.stdout)["steps"]]
    with pytest.raises(ValueError, match="--dp-bucket-bytes must be >= 0"):
        zb.compile(MLP, tmp_path / "out", dp_bucket_bytes=-1)


def test_fuse_cross_entropy_keeps_bfloat16_logits(tmp_path):
    """examples/gpt/gpt2.onnx in bfloat16 with and without
    zb-fuse-cross-entropy: the fused plan keeps the bfloat16 logits and a
    float32 lse per token for B, not autocast's float32 copy of the logits,
    and the plain one equals the CLI's --fuse-cross-entropy=false."""
    gpt = os.path.join(EXAMPLES, "gpt", "gpt2.onnx")
    fused = zb.compile(gpt, tmp_path / "fused", stages=2, microbatches=2,
                       precision="bf16")
    plain = zb.compile(gpt, tmp_path / "plain", stages=2, microbatches=2,
                       precision="bf16", fuse_cross_entropy=False)
    run_tool(tool("zb-compile"), gpt, "--stages", 2, "--microbatches", 2,
             "--precision", "bf16", "--fuse-cross-entropy=false",
             "-o", tmp_path / "cli", "--quiet")
    with open(tmp_path / "cli" / "plan.json") as f:
        cli_plan = json.load(f)
    m_fused = sum(s["m_b"] for s in fused.plan["stages"])
    m_plain = [s["m_b"] for s in plain.plan["stages"]]
    assert [s["m_b"] for s in cli_plan["stages"]] == m_plain
    # Per microbatch: 4 sequences of 32 tokens, a vocabulary of 256: float32
    # logits (4 bytes) replaced by bfloat16 ones (2 bytes) and a float32 lse
    # per token.
    tokens, vocab = 4 * 32, 256
    assert sum(m_plain) - m_fused == tokens * vocab * (4 - 2) - tokens * 4


def test_fuse_attention_keeps_less_activation_memory(tmp_path):
    """examples/gpt/gpt2.onnx with and without zb-fuse-attention: the fused
    plan keeps less per microbatch on every stage (no T x T probabilities),
    and the unfused one equals the CLI's --fuse-attention=false."""
    gpt = os.path.join(EXAMPLES, "gpt", "gpt2.onnx")
    fused = zb.compile(gpt, tmp_path / "fused", stages=2, microbatches=2)
    unfused = zb.compile(gpt, tmp_path / "unfused", stages=2, microbatches=2,
                         fuse_attention=False)
    run_tool(tool("zb-compile"), gpt, "--stages", 2, "--microbatches", 2,
             "--fuse-attention=false", "-o", tmp_path / "cli", "--quiet")
    with open(tmp_path / "cli" / "plan.json") as f:
        cli_plan = json.load(f)
    m_fused = [s["m_b"] for s in fused.plan["stages"]]
    m_unfused = [s["m_b"] for s in unfused.plan["stages"]]
    assert [s["m_b"] for s in cli_plan["stages"]] == m_unfused
    # Per microbatch (the exported batch: 4 sequences of 32 tokens, 4 heads
    # of 16) and layer, the fused attention keeps its output (4 x 4 x 32 x
    # 16 floats; the next matmul keeps it too, transposed) and lse (4 x 4 x
    # 32) instead of the probabilities (4 x 4 x 32 x 32); 2 layers a stage.
    per_layer = 4 * (4 * 4 * 32 * 32 - 4 * 4 * 32 * 16 - 4 * 4 * 32)
    assert [u - f for f, u in zip(m_fused, m_unfused)] == [2 * per_layer] * 2


def test_gpu_kernel_options_equal_the_cli(tmp_path):
    """A bfloat16 GPT (head dim 16) for cuda-emu with the fused attention and
    norm kernels (the default) and without each: every kernel the options
    turn off is replaced by several, so the plan's predicted T_F (the
    kernel report's roofline of the stage) grows; the plan with both off
    equals the CLI's --gpu-attention-kernel=false --gpu-norm-kernel=false."""
    import subprocess
    import sys
    gpt = tmp_path / "gpt.mlir"
    with open(gpt, "w") as f:
        subprocess.run([sys.executable,
                        os.path.join(EXAMPLES, "gpt", "make_model.py"),
                        "--layers", "1", "--batch", "2", "--seq", "16",
                        "--dim", "32", "--heads", "2"], stdout=f, check=True)
    common = dict(stages=1, microbatches=1, schedule="1f1b",
                  target="cuda-emu", precision="bf16")

    def t_f(plan):
        return plan.plan["stages"][0]["t_f"]

    both = zb.compile(gpt, tmp_path / "both", **common)
    no_norm = zb.compile(gpt, tmp_path / "no_norm", gpu_norm_kernel=False,
                         **common)
    neither = zb.compile(gpt, tmp_path / "neither", gpu_norm_kernel=False,
                         gpu_attention_kernel=False, **common)
    assert t_f(both) < t_f(no_norm) < t_f(neither)
    # The heads copied to [B, H, T, D]: 4 more F kernels (q, k, v and the
    # result transposed).
    copied = zb.compile(gpt, tmp_path / "copied",
                        gpu_attention_token_major=False, **common)
    assert t_f(both) < t_f(copied)
    run_tool(tool("zb-compile"), gpt, "--stages", 1, "--microbatches", 1,
             "--schedule", "1f1b", "--target", "cuda-emu", "--precision",
             "bf16", "--gpu-norm-kernel=false", "--gpu-attention-kernel=false",
             "-o", tmp_path / "cli", "--quiet")
    with open(tmp_path / "cli" / "plan.json") as f:
        assert json.load(f)["stages"][0]["t_f"] == t_f(neither)
