/** What tests of the onnxruntime device share: costs that place steps on it. */

/**
 * Device costs that make every step onnxruntime claims worth moving there: the test models
 * are small, and the fixed cost of a session run measured here (about 0.2 ms) would keep them
 * on the host.
 */
export const ONNXRUNTIME_FOR_EVERY_STEP = {
  onnxruntime: { microsPerWork: 1e-7, transfer: { fixedMicros: 0.1, microsPerByte: 1e-7 } },
};
