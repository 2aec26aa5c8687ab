/**
 * QUANTIZED_LSTM's validation and shape inference: each fault is refused with a message
 * naming it (arity, types, ranks, quantization, scalars, shapes, optional groups).
 */
import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import type { Tensor, TensorData } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import type { DeclaredOperand, OperationSignature, PrepareInput } from "./operation.ts";
import { quantizedLstm as op } from "./quantized_lstm.ts";

const BATCH = 2, INPUT = 3, UNITS = 4;

/** Which optional groups the cell has; `outputSize` differs from UNITS only with projection. */
interface Form {
  cifg?: boolean;
  peephole?: boolean;
  projection?: boolean;
  layerNorm?: boolean;
  outputSize?: number;
}

interface Spec {
  type: OperandType;
  shape: number[];
  scale: number;
  value: TensorData | null;
}

function tensor(type: OperandType, shape: number[], scale: number): Spec {
  const n = shape.reduce((a, b) => a * b, 1);
  const value = type === "TENSOR_INT32"
    ? new Int32Array(n)
    : type === "TENSOR_QUANT16_SYMM"
    ? new Int16Array(n)
    : new Int8Array(n);
  return { type, shape, scale, value };
}

function scalar(type: "FLOAT32" | "INT32", value: number): Spec {
  const data = type === "INT32" ? Int32Array.of(value) : Float32Array.of(value);
  return { type, shape: [], scale: 0, value: data };
}

/** The 32 inputs of a cell of the given form (omitted operands have value null). */
function inputSpecs(form: Form = {}): Spec[] {
  const out = form.outputSize ?? UNITS;
  const w8 = (cols: number) => tensor("TENSOR_QUANT8_SYMM", [UNITS, cols], 1 / 64);
  const q16 = () => tensor("TENSOR_QUANT16_SYMM", [UNITS], 2 ** -12);
  const bias = () => tensor("TENSOR_INT32", [UNITS], 0);
  const omitted = (spec: Spec): Spec => ({ ...spec, value: null });
  const when = (present: boolean | undefined, spec: Spec) => present ? spec : omitted(spec);
  return [
    tensor("TENSOR_QUANT8_ASYMM_SIGNED", [BATCH, INPUT], 1 / 128),
    when(!form.cifg, w8(INPUT)),
    w8(INPUT),
    w8(INPUT),
    w8(INPUT),
    when(!form.cifg, w8(out)),
    w8(out),
    w8(out),
    w8(out),
    when(form.peephole && !form.cifg, q16()),
    when(form.peephole, q16()),
    when(form.peephole, q16()),
    when(!form.cifg, bias()),
    bias(),
    bias(),
    bias(),
    when(form.projection, tensor("TENSOR_QUANT8_SYMM", [out, UNITS], 1 / 64)),
    when(form.projection, tensor("TENSOR_INT32", [out], 0)),
    tensor("TENSOR_QUANT8_ASYMM_SIGNED", [BATCH, out], 1 / 128),
    tensor("TENSOR_QUANT16_SYMM", [BATCH, UNITS], 2 ** -11),
    when(form.layerNorm && !form.cifg, q16()),
    when(form.layerNorm, q16()),
    when(form.layerNorm, q16()),
    when(form.layerNorm, q16()),
    scalar("FLOAT32", 0),
    scalar("FLOAT32", 0),
    ...[0, 1, 2, 3].map(() => scalar("FLOAT32", 2 ** -12)),
    scalar("INT32", 0),
    scalar("FLOAT32", 1 / 128),
  ];
}

function outputSpecs(form: Form = {}): Spec[] {
  const out = form.outputSize ?? UNITS;
  return [
    tensor("TENSOR_QUANT8_ASYMM_SIGNED", [BATCH, out], 1 / 128),
    tensor("TENSOR_QUANT16_SYMM", [BATCH, UNITS], 2 ** -11),
    tensor("TENSOR_QUANT8_ASYMM_SIGNED", [BATCH, out], 1 / 128),
  ];
}

function declared(spec: Spec, index: number): DeclaredOperand {
  return {
    index,
    type: spec.type,
    dimensions: spec.shape,
    scale: spec.scale,
    zeroPoint: 0,
    lifetime: spec.value === null ? "NO_VALUE" : "CONSTANT_COPY",
    ...(spec.value ? { value: spec.value } : {}),
  };
}

function signature(inputs: Spec[], outputs: Spec[] = outputSpecs()): OperationSignature {
  return {
    type: "QUANTIZED_LSTM",
    inputs: inputs.map(declared),
    outputs: outputs.map((o, i) => declared(o, 100 + i)),
  };
}

function prepareInputs(specs: Spec[]): PrepareInput[] {
  return specs.map((s) => ({
    type: s.type,
    shape: s.shape,
    scale: s.scale,
    zeroPoint: 0,
    value: s.value,
  }));
}

/** `specs` with input `index` changed. */
function withInput(specs: Spec[], index: number, change: Partial<Spec>): Spec[] {
  return specs.map((s, i) => i === index ? { ...s, ...change } : s);
}

Deno.test("quantizedLstm.validate() accepts every form as HAL V1_3", () => {
  for (
    const form of [{}, { cifg: true }, { peephole: true, layerNorm: true }, {
      projection: true,
      outputSize: 3,
    }]
  ) {
    strictEqual(op.validate(signature(inputSpecs(form), outputSpecs(form))), "V1_3");
  }
});

Deno.test("quantizedLstm.validate() names a wrong input or output count", () => {
  throws(() => op.validate(signature(inputSpecs().slice(0, 31))), /expected 32 inputs, got 31/);
  throws(
    () => op.validate(signature(inputSpecs(), outputSpecs().slice(0, 2))),
    /expected 3 outputs, got 2/,
  );
});

Deno.test("quantizedLstm.validate() names an input or output of the wrong type", () => {
  const unsigned = withInput(inputSpecs(), 0, { type: "TENSOR_QUANT8_ASYMM" });
  throws(
    () => op.validate(signature(unsigned)),
    /input 0 \(operand 0\) has type TENSOR_QUANT8_ASYMM, expected TENSOR_QUANT8_ASYMM_SIGNED/,
  );
  const floatNorm = withInput(inputSpecs(), 21, { type: "TENSOR_FLOAT32" });
  throws(() => op.validate(signature(floatNorm)), /input 21 .* expected TENSOR_QUANT16_SYMM/);
  const intClip = withInput(inputSpecs(), 24, { type: "INT32" });
  throws(() => op.validate(signature(intClip)), /input 24 .* type INT32, expected FLOAT32/);
  const outputs = outputSpecs();
  outputs[1] = { ...outputs[1], type: "TENSOR_QUANT8_ASYMM_SIGNED" };
  throws(
    () => op.validate(signature(inputSpecs(), outputs)),
    /output 1 .* expected TENSOR_QUANT16_SYMM/,
  );
});

Deno.test("quantizedLstm.validate() names a required input of the wrong rank", () => {
  const input3d = withInput(inputSpecs(), 0, { shape: [BATCH, INPUT, 1] });
  throws(() => op.validate(signature(input3d)), /input \(input 0\) .* rank 3, expected 2/);
  const bias2d = withInput(inputSpecs(), 13, { shape: [UNITS, 1] });
  throws(
    () => op.validate(signature(bias2d)),
    /forget_gate_bias \(input 13\) .* rank 2, expected 1/,
  );
});

Deno.test("quantizedLstm.validate() names a cell state scale outside 2^-15 .. 2^-9", () => {
  for (const scale of [2 ** -8, 2 ** -16, 0.001]) {
    throws(
      () => op.validate(signature(withInput(inputSpecs(), 19, { scale }))),
      /cell_state_in \(input 19\) has scale .* power of two from 2\^-15 to 2\^-9/,
    );
  }
});

Deno.test("quantizedLstm.validate() names outputs quantized unlike the states they continue", () => {
  const outputs = outputSpecs();
  outputs[2] = { ...outputs[2], scale: 1 / 64 };
  throws(
    () => op.validate(signature(inputSpecs(), outputs)),
    /output 2 .* scale 0.015625 .* expected output_state_in's 0.0078125/,
  );
  outputs[2] = outputSpecs()[2];
  outputs[1] = { ...outputs[1], scale: 2 ** -12 };
  throws(() => op.validate(signature(inputSpecs(), outputs)), /output 1 .* cell_state_in's/);
});

Deno.test("quantizedLstm.validate() names a negative clip and a scale that is not positive", () => {
  const clip = withInput(inputSpecs(), 25, scalar("FLOAT32", -1));
  throws(
    () => op.validate(signature(clip)),
    /projection_clip \(input 25\) is -1, expected 0 \(none\) or more/,
  );
  const scale = withInput(inputSpecs(), 27, scalar("FLOAT32", 0));
  throws(
    () => op.validate(signature(scale)),
    /forget_intermediate_scale \(input 27\) is 0, expected a positive scale/,
  );
  const hidden = withInput(inputSpecs(), 30, scalar("INT32", 128));
  throws(() => op.validate(signature(hidden)), /hidden_state_zero_point \(input 30\) is 128/);
});

Deno.test("quantizedLstm.validate() needs the input gate's intermediate scale only without CIFG", () => {
  const zero = (form: Form) => withInput(inputSpecs(form), 26, scalar("FLOAT32", 0));
  throws(() => op.validate(signature(zero({}))), /input_intermediate_scale \(input 26\) is 0/);
  strictEqual(op.validate(signature(zero({ cifg: true }))), "V1_3");
});

Deno.test("quantizedLstm.validate() leaves omitted clips alone", () => {
  const specs = inputSpecs().map((s, i) => i === 24 || i === 25 ? { ...s, value: null } : s);
  strictEqual(op.validate(signature(specs)), "V1_3");
  ok(op.optionalInputs?.includes(24) && op.optionalInputs.includes(25));
});

Deno.test("quantizedLstm.prepare() gives [batch, output] states and a [batch, units] cell", () => {
  deepStrictEqual(op.prepare(prepareInputs(inputSpecs()), []), [[2, 4], [2, 4], [2, 4]]);
  const projected = { projection: true, outputSize: 3 };
  deepStrictEqual(op.prepare(prepareInputs(inputSpecs(projected)), []), [[2, 3], [2, 4], [2, 3]]);
});

Deno.test("quantizedLstm.prepare() names inconsistent shapes", () => {
  const forget = withInput(inputSpecs(), 2, { shape: [UNITS, INPUT + 1] });
  throws(
    () => op.prepare(prepareInputs(forget), []),
    /input_to_forget_weights \(input 2\) has shape \[4,4\], expected \[4,3\]/,
  );
  const state = withInput(inputSpecs(), 18, { shape: [BATCH + 1, UNITS] });
  throws(() => op.prepare(prepareInputs(state), []), /output_state_in \(input 18\) has shape/);
  const noProjection = inputSpecs({ outputSize: 3 });
  throws(
    () => op.prepare(prepareInputs(noProjection), []),
    /without projection the output size \(3\) must equal the number of cells \(4\)/,
  );
});

Deno.test("quantizedLstm.prepare() names inconsistent optional groups", () => {
  const cases: [Spec[], RegExp][] = [
    [withInput(inputSpecs(), 5, { value: null }), /must be both present or both omitted/],
    [
      withInput(inputSpecs({ cifg: true }), 12, tensor("TENSOR_INT32", [UNITS], 0)),
      /input_gate_bias \(input 12\) must be omitted with CIFG/,
    ],
    [
      withInput(inputSpecs(), 12, { value: null }),
      /input_gate_bias \(input 12\) is required without CIFG/,
    ],
    [
      withInput(inputSpecs({ peephole: true }), 11, { value: null }),
      /peephole weights .* all present or all omitted/,
    ],
    [
      withInput(inputSpecs({ layerNorm: true }), 22, { value: null }),
      /layer normalization weights .* all present or all omitted/,
    ],
    [
      withInput(inputSpecs({ cifg: true }), 20, tensor("TENSOR_QUANT16_SYMM", [UNITS], 1)),
      /input_layer_norm_weights \(input 20\) must be omitted with CIFG/,
    ],
    [
      withInput(inputSpecs(), 17, tensor("TENSOR_INT32", [UNITS], 0)),
      /projection_bias \(input 17\) requires projection_weights/,
    ],
  ];
  for (const [specs, message] of cases) throws(() => op.prepare(prepareInputs(specs), []), message);
});

Deno.test("quantizedLstm.cost() counts the products of every present weight matrix", () => {
  const inputs = prepareInputs(inputSpecs());
  const outputs = outputSpecs().map((s) => ({ ...s, zeroPoint: 0 }));
  // 4 gates x (4x3 + 4x4) per batch row, plus the 24 output elements.
  strictEqual(op.cost?.(inputs, outputs), BATCH * 4 * (12 + 16) + 24);
});

Deno.test("quantizedLstm.execute() names a scalar fault known only at execution", () => {
  const specs = withInput(inputSpecs(), 31, scalar("FLOAT32", 0));
  const tensors: Tensor[] = specs.map((s) => ({
    type: s.type,
    shape: s.shape,
    scale: s.scale,
    zeroPoint: 0,
    data: s.value,
  }));
  const outputs: Tensor[] = outputSpecs().map((s) => ({
    type: s.type,
    shape: s.shape,
    scale: s.scale,
    zeroPoint: 0,
    data: s.value,
  }));
  throws(
    () => op.execute(tensors, outputs),
    /hidden_state_scale \(input 31\) is 0, expected a positive scale/,
  );
});
