#!/usr/bin/env python3
"""Quantizes the fresh exports with onnxruntime's own quantizers, offline.

  export_quantized.py [--fresh test/models/fresh] [--out test/models/quantized]

Users without a quantized export make one with onnxruntime.quantization; this
script does the same over export_fresh.py's models (no torch needed):

  bert-qdq-int8: quantize_static in the QDQ format, int8 activations and
      per-channel int8 weights, calibrated on four batches of random token
      ids (QuantizeLinear/DequantizeLinear pairs around every MatMul, what
      TensorRT and onnxruntime's int8 paths consume);
  bert-qdq-fp8: the same with float8 E4M3FN activations and weights (per
      tensor; onnxruntime's form of the FP8 Q/DQ pairs ModelOpt writes);
  gpt2-qdq-int8, vit-qdq-int8, llama-qdq-int8: the same over the other
      architectures' TorchScript exports (LLaMA's rotary halves quantized
      and dequantized on either side of their slices and concat);
  bert-qop-int8: quantize_static in the QOperator format (int8, weights
      per channel): QLinearMatMul, and com.microsoft QLinearAdd, QLinearMul
      and QLinearSoftmax between them, with QuantizeLinear and
      DequantizeLinear only at the edges;
  vit-qop-int8, gpt2-qop-int8, llama-qop-int8: the same over the other
      architectures' TorchScript exports: QLinearConv (ViT's patch
      embedding), QLinearConcat (ViT's class token, LLaMA's rotary halves),
      com.microsoft QGemm (GPT-2's Conv1D layers) and QLinearSigmoid
      (LLaMA's SiLU);
  bert-dynamic-int8, bert-dynamic-uint8: quantize_dynamic, the form
      onnxruntime recommends for Transformers (DynamicQuantizeLinear of
      each activation, MatMulInteger, the scales multiplied after): int8
      weights per channel over the dynamo export, and uint8 weights with
      zero points over the TorchScript one;
  vit-dynamic-int8: quantize_dynamic over the ViT dynamo export, whose
      patch embedding becomes a ConvInteger;
  gpt2-dynamic-int8, llama-dynamic-int8: the same over GPT-2's TorchScript
      export and LLaMA's dynamo one;
  bert-ortopt-dynamic-int8: quantize_dynamic over the BERT that
      onnxruntime's transformer optimizer fused (the flow onnxruntime
      documents for BERT int8): com.microsoft QAttention,
      QEmbedLayerNormalization and MatMulInteger;
  llama-matmulnbits-int4: MatMulNBitsQuantizer, 4-bit blocks of 32 with zero
      points (com.microsoft MatMulNBits, what Olive writes);
  llama-qdq-uint4, llama-qdq-int4: the same quantizer in the QDQ format,
      uint4 blocks of 32 with zero points and symmetric int4 blocks of 64
      (a blocked DequantizeLinear of each 4-bit weight into its MatMul,
      Olive's default encoding and ModelOpt's INT4-AWQ form).

Each folder gets model.onnx (one file), inputs/ (the fresh export's), its
dims file where the export has symbolic dims, and
expected/ (onnxruntime's outputs, its quantized paths made exact:
session.disable_quant_qdq=1 so that QDQ pairs are not fused into integer
kernels, accuracy_level 0 for MatMulNBits), the layout check_models.py
reads.
"""
import argparse
import os
import shutil
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime import quantization as q

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB, SEED = 96, 3  # export_fresh.py's vocabulary


def inputs_of(folder):
    path = os.path.join(folder, "inputs")
    return {f[:-4]: np.load(os.path.join(path, f))
            for f in sorted(os.listdir(path))}


class RandomTokens(q.CalibrationDataReader):
    """Four batches shaped like `inputs`, with random token ids."""

    def __init__(self, inputs):
        rng = np.random.default_rng(SEED)
        self.batches = iter([
            {k: rng.integers(0, VOCAB, v.shape).astype(v.dtype)
             if k == "input_ids" else v for k, v in inputs.items()}
            for _ in range(4)])

    def get_next(self):
        return next(self.batches, None)


def qdq_int8(source, target, inputs):
    q.quantize_static(source, target, RandomTokens(inputs),
                      quant_format=q.QuantFormat.QDQ, per_channel=True,
                      activation_type=q.QuantType.QInt8,
                      weight_type=q.QuantType.QInt8)


def qdq_fp8(source, target, inputs):
    q.quantize_static(source, target, RandomTokens(inputs),
                      quant_format=q.QuantFormat.QDQ,
                      # Its float8 calibration is histograms, which the
                      # attention mask's -inf breaks: only the products.
                      calibrate_method=q.CalibrationMethod.Distribution,
                      op_types_to_quantize=["MatMul", "Gemm"],
                      activation_type=q.QuantType.QFLOAT8E4M3FN,
                      weight_type=q.QuantType.QFLOAT8E4M3FN)


def qop_int8(source, target, inputs):
    q.quantize_static(source, target, RandomTokens(inputs),
                      quant_format=q.QuantFormat.QOperator, per_channel=True,
                      activation_type=q.QuantType.QInt8,
                      weight_type=q.QuantType.QInt8)


def dynamic_int8(source, target, inputs):
    q.quantize_dynamic(source, target, per_channel=True,
                       weight_type=q.QuantType.QInt8)


def dynamic_uint8(source, target, inputs):
    q.quantize_dynamic(source, target, weight_type=q.QuantType.QUInt8)


def dynamic_int8_fused(source, target, inputs):
    # The fused contrib ops have no ONNX shape inference: their outputs'
    # type is given.
    q.quantize_dynamic(source, target, weight_type=q.QuantType.QInt8,
                       extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})


def weight_only(block_size, is_symmetric, quant_format):
    def quantize(source, target, inputs):
        # Needs onnx_ir (pip install onnx-ir).
        from onnxruntime.quantization.matmul_nbits_quantizer import (
            MatMulNBitsQuantizer)
        quantizer = MatMulNBitsQuantizer(
            onnx.load(source), block_size=block_size,
            is_symmetric=is_symmetric, quant_format=quant_format)
        quantizer.process()
        onnx.save(quantizer.model.model, target)
    return quantize


def exact_session(path):
    options = ort.SessionOptions()
    options.add_session_config_entry("session.disable_quant_qdq", "1")
    # The graph as written: onnxruntime's rewrites, even its basic level's,
    # are not the ONNX arithmetic. Over qdq_int8 of the LLaMA TorchScript
    # export they moved one quantized value, 0.043 in the logits; with them
    # off (or every tensor a graph output, which stops them) onnxruntime
    # equals Kiln's reference interpreter and host backend bit for bit.
    options.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    return ort.InferenceSession(path, options,
                                providers=["CPUExecutionProvider"])


MODELS = [("bert-qdq-int8", "bert-torchscript", qdq_int8),
          ("bert-qdq-fp8", "bert-torchscript", qdq_fp8),
          ("bert-qop-int8", "bert-torchscript", qop_int8),
          ("vit-qop-int8", "vit-torchscript", qop_int8),
          ("gpt2-qop-int8", "gpt2-torchscript", qop_int8),
          ("llama-qop-int8", "llama-torchscript", qop_int8),
          ("gpt2-qdq-int8", "gpt2-torchscript", qdq_int8),
          ("llama-qdq-int8", "llama-torchscript", qdq_int8),
          ("vit-qdq-int8", "vit-torchscript", qdq_int8),
          ("bert-dynamic-int8", "bert-dynamo", dynamic_int8),
          ("bert-dynamic-uint8", "bert-torchscript", dynamic_uint8),
          ("vit-dynamic-int8", "vit-dynamo", dynamic_int8),
          ("gpt2-dynamic-int8", "gpt2-torchscript", dynamic_int8),
          ("llama-dynamic-int8", "llama-dynamo", dynamic_int8),
          ("bert-ortopt-dynamic-int8", "bert-torchscript-ortopt-dynamic",
           dynamic_int8_fused),
          ("llama-matmulnbits-int4", "llama-torchscript",
           weight_only(32, False, q.QuantFormat.QOperator)),
          ("llama-qdq-uint4", "llama-dynamo",
           weight_only(32, False, q.QuantFormat.QDQ)),
          ("llama-qdq-int4", "llama-dynamo",
           weight_only(64, True, q.QuantFormat.QDQ))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh", default=os.path.join(HERE, "fresh"))
    parser.add_argument("--out", default=os.path.join(HERE, "quantized"))
    parser.add_argument("--only", nargs="*", help="these models only")
    args = parser.parse_args()
    for name, source, quantize in MODELS:
        if args.only and name not in args.only:
            continue
        inputs = inputs_of(os.path.join(args.fresh, source))
        folder = os.path.join(args.out, name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(os.path.join(folder, "inputs"))
        os.makedirs(os.path.join(folder, "expected"))
        with tempfile.TemporaryDirectory(prefix="kiln-quantize-") as work:
            # One self-contained file to quantize (the fresh weights are
            # external data).
            plain = os.path.join(work, "model.onnx")
            onnx.save(onnx.load(os.path.join(args.fresh, source, "model.onnx")),
                      plain)
            quantize(plain, os.path.join(folder, "model.onnx"), inputs)
        session = exact_session(os.path.join(folder, "model.onnx"))
        for n, v in inputs.items():
            np.save(os.path.join(folder, "inputs", n + ".npy"), v)
        # An export with symbolic dims keeps them (check_models.py's dims).
        dims = os.path.join(args.fresh, source, "dims")
        if os.path.exists(dims):
            shutil.copy(dims, os.path.join(folder, "dims"))
        for info, v in zip(session.get_outputs(), session.run(None, inputs)):
            np.save(os.path.join(folder, "expected", info.name + ".npy"), v)
        ops = sorted({n.op_type for n in onnx.load(
            os.path.join(folder, "model.onnx")).graph.node})
        print(f"wrote {folder}: {' '.join(ops)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
