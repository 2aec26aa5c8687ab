/**
 * Audio front ends against onnxruntime-node (see tests/onnx/compare.ts): 1-D Conv, pooling
 * and ConvTranspose over [N, C, L], a reflect-padded Conv1d with a DFT basis and its
 * magnitude (silero VAD's front end), STFT and DFT, and the window functions and
 * MelWeightMatrix folded to constants; then the refusals and their messages.
 */
import { deepStrictEqual, throws } from "node:assert/strict";
import { convertOnnx } from "../converter/onnx/convert.ts";
import { DriverError } from "../nnapi/errors.ts";
import { withTestServer } from "./server_fixture.ts";
import { type GraphSpec, INT64, type NodeSpec, onnxBytes } from "../tools/onnx_graphs.ts";
import { chain, compare, compareBytes, weights } from "./onnx/compare.ts";

/** An int64 scalar initializer. */
function int64Scalar(name: string, value: number) {
  return { name, dims: [], values: [value], int64: true };
}

/** A float scalar initializer. */
function floatScalar(name: string, value: number) {
  return { name, dims: [], values: [value] };
}

/** A one-input graph whose input may have extents known only at execution. */
function graph(
  input: (number | string)[],
  output: (number | string)[],
  nodes: NodeSpec[],
  initializers: GraphSpec["initializers"] = [],
  opset = 13,
): GraphSpec {
  return { ...chain([], output, nodes, initializers, opset), inputs: [{ name: "x", dims: input }] };
}

function refusal(spec: GraphSpec, pattern: RegExp) {
  throws(
    () => convertOnnx(onnxBytes(spec)),
    (error: unknown) =>
      error instanceof DriverError && error.status === "INVALID_ARGUMENT" &&
      pattern.test(error.message),
  );
}

Deno.test("Conv on 1-D input [N, C, L] with pads, strides, dilations and groups", async () => {
  await withTestServer({}, async (server) => {
    await compare(
      server,
      chain([2, 3, 20], [2, 5, 10], [{
        op: "Conv",
        inputs: ["x", "w", "b"],
        outputs: ["y"],
        attributes: { kernel_shape: [3], pads: [1, 2], strides: [2], dilations: [2] },
      }], [weights("w", [5, 3, 3], 1), weights("b", [5], 2)]),
      "Conv1d pads, strides, dilations",
    );
    await compare(
      server,
      chain([1, 4, 17], [1, 6, 17], [{
        op: "Conv",
        inputs: ["x", "w"],
        outputs: ["y"],
        attributes: { group: 2, auto_pad: "SAME_UPPER" },
      }], [weights("w", [6, 2, 5], 3)]),
      "Conv1d grouped, SAME_UPPER",
    );
    await compare(
      server,
      chain([1, 4, 16], [1, 8, 14], [{
        op: "Conv",
        inputs: ["x", "w", "b"],
        outputs: ["y"],
        attributes: { group: 4, dilations: [2], pads: [1, 1] },
      }], [weights("w", [8, 1, 3], 4), weights("b", [8], 5)]),
      "Conv1d depthwise (multiplier 2), dilated",
    );
    // A BatchNormalization after a 1-D convolution runs on [N, C, L] as MUL + ADD.
    await compare(
      server,
      chain([2, 3, 12], [2, 4, 12], [
        { op: "Conv", inputs: ["x", "w"], outputs: ["c"], attributes: { pads: [1, 1] } },
        { op: "BatchNormalization", inputs: ["c", "s", "bb", "m", "v"], outputs: ["y"] },
      ], [
        weights("w", [4, 3, 3], 6),
        weights("s", [4], 7),
        weights("bb", [4], 8),
        weights("m", [4], 9),
        { name: "v", dims: [4], values: [0.5, 1, 1.5, 2] },
      ]),
      "Conv1d + BatchNormalization",
    );
    // The length (and batch) known only at execution: EXPAND_DIMS and SQUEEZE keep them so.
    const spec = graph(["N", 3, "L"], ["N", 5, "M"], [{
      op: "Conv",
      inputs: ["x", "w"],
      outputs: ["y"],
      attributes: { strides: [3] },
    }], [weights("w", [5, 3, 4], 10)]);
    const { conversion } = await compareBytes(
      server,
      onnxBytes(spec),
      { x: [2, 3, 25] },
      "Conv1d of unknown batch and length",
    );
    deepStrictEqual(conversion.outputs[0].dimensions, [0, 5, 0]);
  });
});

Deno.test("MaxPool, AveragePool and ConvTranspose on 1-D input", async () => {
  await withTestServer({}, async (server) => {
    await compare(
      server,
      chain([2, 3, 15], [2, 3, 8], [{
        op: "MaxPool",
        inputs: ["x"],
        outputs: ["y"],
        attributes: { kernel_shape: [3], strides: [2], pads: [1, 1] },
      }]),
      "MaxPool1d",
    );
    await compare(
      server,
      chain([1, 2, 11], [1, 2, 6], [{
        op: "MaxPool",
        inputs: ["x"],
        outputs: ["y"],
        attributes: { kernel_shape: [2], strides: [2], ceil_mode: 1 },
      }]),
      "MaxPool1d ceil_mode",
    );
    for (const countIncludePad of [0, 1]) {
      await compare(
        server,
        chain([2, 3, 11], [2, 3, 6], [{
          op: "AveragePool",
          inputs: ["x"],
          outputs: ["y"],
          attributes: {
            kernel_shape: [4],
            strides: [2],
            pads: [1, 2],
            count_include_pad: countIncludePad,
          },
        }]),
        `AveragePool1d count_include_pad ${countIncludePad}`,
      );
    }
    await compare(
      server,
      chain([1, 4, 7], [1, 3, 15], [{
        op: "ConvTranspose",
        inputs: ["x", "w", "b"],
        outputs: ["y"],
        attributes: { strides: [2], pads: [1, 0], output_padding: [1] },
      }], [weights("w", [4, 3, 3], 11), weights("b", [3], 12)]),
      "ConvTranspose1d strides, pads, output_padding",
    );
  });
});

/**
 * silero VAD's STFT: a real DFT basis [2 * bins, 1, n] (a Hann window times cos, then
 * times -sin) as a Conv1d with stride n / 2 over the reflect-padded signal.
 */
function dftBasis(n: number): Float32Array {
  const bins = n / 2 + 1;
  const basis = new Float32Array(2 * bins * n);
  for (let k = 0; k < bins; k++) {
    for (let t = 0; t < n; t++) {
      const window = 0.5 - 0.5 * Math.cos((2 * Math.PI * t) / n);
      const angle = (2 * Math.PI * ((k * t) % n)) / n;
      basis[k * n + t] = window * Math.cos(angle);
      basis[(bins + k) * n + t] = -window * Math.sin(angle);
    }
  }
  return basis;
}

Deno.test("a silero-style front end: reflect Pad, Conv1d with a DFT basis, magnitude", async () => {
  await withTestServer({}, async (server) => {
    const n = 256;
    const bins = n / 2 + 1;
    const squares: Record<string, NodeSpec[]> = {
      "Mul": [
        { op: "Mul", inputs: ["re", "re"], outputs: ["re2"] },
        { op: "Mul", inputs: ["im", "im"], outputs: ["im2"] },
      ],
      "Pow": [
        { op: "Pow", inputs: ["re", "two"], outputs: ["re2"] },
        { op: "Pow", inputs: ["im", "two"], outputs: ["im2"] },
      ],
    };
    for (const [form, square] of Object.entries(squares)) {
      await compare(
        server,
        chain([1, 512], [1, bins, 4], [
          { op: "Unsqueeze", inputs: ["x", "one"], outputs: ["x3"] },
          {
            op: "Pad",
            inputs: ["x3", "pads"],
            outputs: ["padded"],
            attributes: { mode: "reflect" },
          },
          {
            op: "Conv",
            inputs: ["padded", "basis"],
            outputs: ["spectrum"],
            attributes: { strides: [n / 2] },
          },
          { op: "Slice", inputs: ["spectrum", "zero", "half", "one"], outputs: ["re"] },
          { op: "Slice", inputs: ["spectrum", "half", "all", "one"], outputs: ["im"] },
          ...square,
          { op: "Add", inputs: ["re2", "im2"], outputs: ["power"] },
          { op: "Sqrt", inputs: ["power"], outputs: ["y"] },
        ], [
          { name: "one", dims: [1], values: [1], int64: true },
          { name: "zero", dims: [1], values: [0], int64: true },
          { name: "half", dims: [1], values: [bins], int64: true },
          { name: "all", dims: [1], values: [2 * bins], int64: true },
          { name: "pads", dims: [6], values: [0, 0, 64, 0, 0, 64], int64: true },
          { name: "basis", dims: [2 * bins, 1, n], values: dftBasis(n) },
          ...(form === "Pow" ? [{ name: "two", dims: [], values: [2] }] : []),
        ]),
        `silero front end (${form})`,
      );
    }
  });
});

/** An STFT graph: signal x, frame_step, then window and frame_length when given. */
function stftGraph(
  signal: (number | string)[],
  output: (number | string)[],
  options: {
    step: number;
    frameLength?: number;
    window?: NodeSpec;
    windowValues?: ArrayLike<number>;
    onesided?: number;
  },
): GraphSpec {
  const initializers: GraphSpec["initializers"] = [int64Scalar("step", options.step)];
  const nodes: NodeSpec[] = [];
  if (options.window) {
    nodes.push(options.window);
    initializers.push(int64Scalar("size", options.frameLength!));
  }
  if (options.windowValues) {
    initializers.push({
      name: "w",
      dims: [options.windowValues.length],
      values: options.windowValues,
    });
  }
  const hasWindow = options.window !== undefined || options.windowValues !== undefined;
  const inputs = ["x", "step", hasWindow ? "w" : ""];
  if (options.frameLength !== undefined && !options.window) {
    inputs.push("n");
    initializers.push(int64Scalar("n", options.frameLength));
  }
  nodes.push({
    op: "STFT",
    inputs,
    outputs: ["y"],
    attributes: options.onesided === undefined ? {} : { onesided: options.onesided },
  });
  return graph(signal, output, nodes, initializers, 17);
}

Deno.test("STFT with and without a window, onesided or not, real or complex", async () => {
  await withTestServer({}, async (server) => {
    const hann: NodeSpec = { op: "HannWindow", inputs: ["size"], outputs: ["w"] };
    await compare(
      server,
      stftGraph([2, 64, 1], [2, 7, 9, 2], { step: 8, frameLength: 16, window: hann }),
      "STFT, HannWindow folded, onesided",
    );
    await compare(
      server,
      stftGraph([2, 70, 1], [2, 6, 16, 2], { step: 10, frameLength: 16, onesided: 0 }),
      "STFT, frame_length without window, onesided 0",
    );
    await compare(
      server,
      stftGraph([1, 50, 1], [1, 10, 7, 2], {
        step: 4,
        windowValues: Array.from({ length: 12 }, (_, i) => 0.2 + i / 12),
        frameLength: 12,
      }),
      "STFT, window initializer and frame_length, n not a power of two",
    );
    // No window here: onnxruntime reads a window of a complex STFT as complex values (two
    // floats each), which is not ONNX's definition.
    await compare(
      server,
      stftGraph([1, 40, 2], [1, 7, 10, 2], { step: 5, frameLength: 10, onesided: 0 }),
      "STFT of a complex signal",
    );
    // The batch or the length known only at execution: framing by strided convolution.
    for (const signal of [["B", 100, 1], [1, "L", 1], ["B", "L", 1], ["B", "L"]]) {
      const spec = stftGraph(signal, ["B", "F", 9, 2], {
        step: 6,
        frameLength: 16,
        window: hann,
      });
      const shape = signal.map((d) => typeof d === "number" ? d : d === "B" ? 2 : 100);
      const { conversion } = await compareBytes(
        server,
        onnxBytes(spec),
        { x: shape },
        `STFT of signal [${signal}]`,
      );
      const frames = signal[1] === "L" ? 0 : 15;
      deepStrictEqual(conversion.outputs[0].dimensions.slice(1), [frames, 9, 2]);
    }
    await compare(
      server,
      stftGraph([2, 60, 2], [2, 5, 12, 2], { step: 12, frameLength: 12, onesided: 0 }),
      "STFT of a complex signal, frames not overlapping",
    );
  });
});

Deno.test("DFT along any signal axis: real or complex, inverse, onesided, dft_length", async () => {
  await withTestServer({}, async (server) => {
    const dft = (attributes: NodeSpec["attributes"], inputs = ["x"]): NodeSpec[] => [
      { op: "DFT", inputs, outputs: ["y"], attributes },
    ];
    await compare(
      server,
      chain([2, 8, 3, 1], [2, 8, 3, 2], dft({ axis: 1 }), [], 17),
      "DFT real, axis 1 of 4 (transposed)",
    );
    await compare(
      server,
      chain([2, 3, 8, 1], [2, 3, 7, 2], dft({ axis: 2, onesided: 1 }, ["x", "len"]), [
        int64Scalar("len", 12),
      ], 17),
      "DFT real onesided, dft_length 12 zero-pads 8",
    );
    await compare(
      server,
      chain([2, 6, 2], [2, 6, 2], dft({ axis: 1, inverse: 1 }), [], 17),
      "DFT complex inverse",
    );
    await compare(
      server,
      chain([3, 10, 4, 2], [3, 10, 4, 2], dft({ axis: -3 }), [], 17),
      "DFT complex, negative axis, n not a power of two",
    );
    await compare(
      server,
      chain([2, 5, 8, 1], [2, 4, 8, 2], dft({}, ["x", "len", "axis"]), [
        int64Scalar("len", 4),
        int64Scalar("axis", 1),
      ], 20),
      "DFT opset 20, axis input, dft_length 4 cuts 5",
    );
    await compare(
      server,
      chain([2, 16, 1], [2, 16, 2], dft({}), [], 20),
      "DFT opset 20, default axis -2",
    );
    // An extent known only at execution keeps the result's rank and other extents known.
    for (
      const [input, axis] of [[["B", 8, 3, 1], 1], [[3, "B", 8, 1], 2], [["B", 6, 2], 1]] as const
    ) {
      const output = input.map((d, i) => i === input.length - 1 ? 2 : d);
      const { conversion } = await compareBytes(
        server,
        onnxBytes(graph([...input], output, dft({ axis }), [], 17)),
        { x: input.map((d) => typeof d === "number" ? d : 2) },
        `DFT of [${input}] along axis ${axis}`,
      );
      deepStrictEqual(
        conversion.outputs[0].dimensions,
        output.map((d) => typeof d === "number" ? d : 0),
      );
    }
    // inverse with onesided: the IRFFT of a one-sided spectrum (its bins' mirror images
    // implied), a real output.
    await compare(
      server,
      chain([2, 5, 2], [2, 8, 1], dft({ inverse: 1, onesided: 1 }), [], 20),
      "DFT opset 20, IRFFT, n = 2 * (bins - 1)",
    );
    await compare(
      server,
      chain([3, 5, 2, 2], [3, 9, 2, 1], dft({ axis: 1, inverse: 1, onesided: 1 }, ["x", "len"]), [
        int64Scalar("len", 9),
      ], 17),
      "DFT opset 17, IRFFT, odd dft_length, transposed",
    );
  });
});

Deno.test("window functions and MelWeightMatrix fold to constants", async () => {
  await withTestServer({}, async (server) => {
    for (const op of ["HannWindow", "HammingWindow", "BlackmanWindow"]) {
      for (const periodic of [1, 0]) {
        await compare(
          server,
          chain(
            [2, 20],
            [2, 20],
            [
              { op, inputs: ["size"], outputs: ["w"], attributes: { periodic } },
              { op: "Mul", inputs: ["x", "w"], outputs: ["y"] },
            ],
            [int64Scalar("size", 20)],
            17,
          ),
          `${op} periodic ${periodic}`,
        );
      }
    }
    const melInputs = ["mels", "dft", "rate", "low", "high"];
    const mel = (mels: number, dft: number, rate: number, low: number, high: number) => [
      int64Scalar("mels", mels),
      int64Scalar("dft", dft),
      int64Scalar("rate", rate),
      floatScalar("low", low),
      floatScalar("high", high),
    ];
    await compare(
      server,
      chain(
        [3, 33],
        [3, 8],
        [
          { op: "MelWeightMatrix", inputs: melInputs, outputs: ["m"] },
          { op: "MatMul", inputs: ["x", "m"], outputs: ["y"] },
        ],
        mel(8, 64, 16000, 20, 8000),
        17,
      ),
      "MelWeightMatrix 8 x 33",
    );
    await compare(
      server,
      chain(
        [2, 129],
        [2, 40],
        [
          { op: "MelWeightMatrix", inputs: melInputs, outputs: ["m"] },
          { op: "MatMul", inputs: ["x", "m"], outputs: ["y"] },
        ],
        mel(40, 256, 16000, 0, 7900),
        17,
      ),
      "MelWeightMatrix 40 x 129 (narrow triangles at the low end)",
    );
    // A log-mel spectrogram: STFT with a Hann window, power, mel filter bank, log.
    await compare(
      server,
      chain([1, 400, 1], [1, 22, 16], [
        { op: "HannWindow", inputs: ["size"], outputs: ["w"] },
        { op: "STFT", inputs: ["x", "step", "w"], outputs: ["s"] },
        { op: "Mul", inputs: ["s", "s"], outputs: ["s2"] },
        {
          op: "ReduceSum",
          inputs: ["s2", "last"],
          outputs: ["power"],
          attributes: { keepdims: 0 },
        },
        { op: "MelWeightMatrix", inputs: melInputs, outputs: ["m"] },
        { op: "MatMul", inputs: ["power", "m"], outputs: ["melspec"] },
        { op: "Add", inputs: ["melspec", "floor"], outputs: ["shifted"] },
        { op: "Log", inputs: ["shifted"], outputs: ["y"] },
      ], [
        int64Scalar("size", 64),
        int64Scalar("step", 16),
        { name: "last", dims: [1], values: [-1], int64: true },
        floatScalar("floor", 1e-3),
        ...mel(16, 64, 16000, 60, 7000),
      ], 17),
      "log-mel spectrogram",
    );
  });
});

Deno.test("spectral and 1-D refusals name their cause", () => {
  const signal = (nodes: NodeSpec[], initializers: GraphSpec["initializers"] = []) =>
    chain([1, 64, 1], [1, 7, 9, 2], nodes, initializers, 17);
  refusal(
    signal([{ op: "STFT", inputs: ["x", "step"], outputs: ["y"], name: "s" }], [
      int64Scalar("step", 8),
    ]),
    /node 's' \(STFT\): the frame length is unknown: give a window or a frame_length/,
  );
  refusal(
    chain([1, 64, 2], [1, 7, 16, 2], [{
      op: "STFT",
      inputs: ["x", "step", "", "n"],
      outputs: ["y"],
    }], [
      int64Scalar("step", 8),
      int64Scalar("n", 16),
    ], 17),
    /onesided output is not defined for a complex input; set onesided to 0/,
  );
  refusal(
    {
      ...signal([{ op: "STFT", inputs: ["x", "step", "w"], outputs: ["y"] }], [
        int64Scalar("step", 8),
      ]),
      inputs: [{ name: "x", dims: [1, 64, 1] }, { name: "w", dims: [16] }],
    },
    /the window \('w'\) must be a constant/,
  );
  refusal(
    {
      ...signal([{ op: "STFT", inputs: ["x", "step", "", "n"], outputs: ["y"] }], [
        int64Scalar("n", 16),
      ]),
      inputs: [{ name: "x", dims: [1, 64, 1] }, { name: "step", dims: [], type: INT64 }],
    },
    /STFT's frame_step \('step'\) must be a constant/,
  );
  refusal(
    signal([{ op: "STFT", inputs: ["x", "step", "w", "n"], outputs: ["y"] }], [
      int64Scalar("step", 8),
      int64Scalar("n", 16),
      { name: "w", dims: [12], values: new Array(12).fill(1) },
    ]),
    /the window has 12 values but frame_length is 16/,
  );
  refusal(
    signal([{ op: "STFT", inputs: ["x", "step", "", "n"], outputs: ["y"] }], [
      int64Scalar("step", 8),
      int64Scalar("n", 80),
    ]),
    /the signal has 64 samples, fewer than one frame \(80\)/,
  );
  refusal(
    chain(
      [2, 8, 1],
      [2, 8, 2],
      [{ op: "DFT", inputs: ["x"], outputs: ["y"], attributes: { axis: 2 } }],
      [],
      17,
    ),
    /axis 2 is the real\/imaginary axis/,
  );
  refusal(
    chain(
      [2, 8, 2],
      [2, 5, 2],
      [{
        op: "DFT",
        inputs: ["x"],
        outputs: ["y"],
        attributes: { onesided: 1 },
      }],
      [],
      17,
    ),
    /onesided output is not defined for a complex input/,
  );
  refusal(
    chain(
      [2, 6, 2],
      [2, 6, 1],
      [{
        op: "DFT",
        inputs: ["x", "len"],
        outputs: ["y"],
        attributes: { inverse: 1, onesided: 1 },
      }],
      [int64Scalar("len", 6)],
      20,
    ),
    /an IRFFT of length 6 takes 4 bins; the input has 6/,
  );
  refusal(
    graph([2, "n", 1], [2, "n", 2], [{ op: "DFT", inputs: ["x"], outputs: ["y"] }], [], 17),
    /the transformed axis 1 has an extent known only at execution/,
  );
  refusal(
    chain([2, 8, 3], [2, 8, 2], [{ op: "DFT", inputs: ["x"], outputs: ["y"] }], [], 17),
    /the last extent is 3; expected 1 \(real\) or 2 \(real, imaginary\)/,
  );
  refusal(
    {
      ...chain(
        [16],
        [16],
        [
          { op: "HannWindow", inputs: ["size"], outputs: ["w"] },
          { op: "Mul", inputs: ["x", "w"], outputs: ["y"] },
        ],
        [],
        17,
      ),
      inputs: [{ name: "x", dims: [16] }, { name: "size", dims: [], type: INT64 }],
    },
    /the window size \('size'\) must be a constant/,
  );
  refusal(
    chain(
      [16],
      [16],
      [
        { op: "HannWindow", inputs: ["size"], outputs: ["w"], attributes: { output_datatype: 9 } },
        { op: "Mul", inputs: ["x", "w"], outputs: ["y"] },
      ],
      [int64Scalar("size", 16)],
      17,
    ),
    /output_datatype BOOL is not supported/,
  );
  refusal(
    chain([3, 33], [3, 8], [
      { op: "MelWeightMatrix", inputs: ["mels", "dft", "rate", "low", "high"], outputs: ["m"] },
      { op: "MatMul", inputs: ["x", "m"], outputs: ["y"] },
    ], [
      int64Scalar("mels", 8),
      int64Scalar("dft", 64),
      int64Scalar("rate", 16000),
      floatScalar("low", 0),
      floatScalar("high", 9000),
    ], 17),
    /upper_edge_hertz 9000 falls in bin 36, outside the 33 bins/,
  );
  refusal(
    chain([1, 3, 10], [1, 4, 8], [{
      op: "Conv",
      inputs: ["x", "w"],
      outputs: ["y"],
      attributes: { kernel_shape: [1, 3] },
    }], [weights("w", [4, 3, 3], 1)]),
    /kernel_shape \[1,3\] has 2 values; a 1-D Conv takes 1/,
  );
  refusal(
    chain([1, 3, 10], [1, 4, 8], [{ op: "Conv", inputs: ["x", "w"], outputs: ["y"] }], [
      weights("w", [4, 3, 3, 3], 1),
    ]),
    /the weights have rank 4; a 1-D Conv takes rank 3/,
  );
  refusal(
    {
      ...chain([1, 3, 10], [1, 3, 5], [{
        op: "MaxPool",
        inputs: ["x"],
        outputs: ["y", "i"],
        attributes: { kernel_shape: [2], strides: [2] },
      }]),
      outputs: [{ name: "y", dims: [1, 3, 5] }, { name: "i", dims: [1, 3, 5], type: INT64 }],
    },
    /the Indices output is not supported/,
  );
});
