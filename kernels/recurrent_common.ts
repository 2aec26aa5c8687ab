/**
 * Helpers shared by the float recurrent kernels (LSTM, RNN, SVDF): the activation functor
 * NNAPI's CPU reference applies (`ActivationFunctor` / TFLite `ApplyActivationToVector`),
 * and the batched matrix-vector product of TFLite `tensor_utils`. (Android 10 runs the
 * float16 forms of these operations in float32: see `typed_arrays.ts` for the staging.)
 */

/** Activation codes (`ActivationFn` / `TfLiteFusedActivation`) used by recurrent operations. */
export const Activation = {
  NONE: 0,
  RELU: 1,
  RELU1: 2,
  RELU6: 3,
  TANH: 4,
  SIGN_BIT: 5,
  SIGMOID: 6,
} as const;

/**
 * Whether the reference `ActivationFunctor` implements the code: NONE, RELU, RELU6, TANH and
 * SIGMOID. (RELU1 and SIGN_BIT abort the Android process; the driver rejects them instead.)
 */
export function isSupportedActivation(code: number): boolean {
  return code === Activation.NONE || code === Activation.RELU || code === Activation.RELU6 ||
    code === Activation.TANH || code === Activation.SIGMOID;
}

/** The logistic function 1 / (1 + e^-x). */
export function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}

/** The scalar function of an activation code; throws a RangeError for unsupported codes. */
export function activationFunction(code: number): (x: number) => number {
  switch (code) {
    case Activation.NONE:
      return (x) => x;
    case Activation.RELU:
      return (x) => (x < 0 ? 0 : x);
    case Activation.RELU6:
      return (x) => Math.max(0, Math.min(x, 6));
    case Activation.TANH:
      return Math.tanh;
    case Activation.SIGMOID:
      return sigmoid;
    default:
      throw new RangeError(`unsupported activation function ${code}`);
  }
}

/** Applies an activation code to `length` elements of `source`, writing `target`. */
export function applyActivation(
  source: Float32Array,
  target: Float32Array,
  length: number,
  code: number,
): void {
  const f = activationFunction(code);
  for (let i = 0; i < length; i++) target[i] = f(source[i]);
}

/**
 * TFLite `MatrixBatchVectorMultiplyAccumulate`: for each batch b and matrix row r,
 * `result[offset + (b * rows + r) * stride] += dot(matrix[r, :], vectors[b, :])`.
 * The matrix is row-major [rows, cols], the vectors [nBatch, cols].
 */
export function matrixBatchVectorMultiplyAccumulate(
  matrix: Float32Array,
  rows: number,
  cols: number,
  vectors: Float32Array,
  nBatch: number,
  result: Float32Array,
  offset = 0,
  stride = 1,
): void {
  let index = offset;
  for (let b = 0; b < nBatch; b++) {
    const v = b * cols;
    for (let r = 0; r < rows; r++) {
      const m = r * cols;
      let acc = result[index];
      for (let c = 0; c < cols; c++) acc += matrix[m + c] * vectors[v + c];
      result[index] = acc;
      index += stride;
    }
  }
}
