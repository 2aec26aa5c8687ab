/**
 * Wire models with IF and WHILE for the control-flow tests, written out operand by operand
 * so each test's expected values can be worked out by hand from the model. Counters are
 * float32 tensors of shape [1] (ADD has no int32 form before HAL 1.3's int32 extension).
 */
import { float32Tensor, int32Scalar } from "./server_fixture.ts";

/** A wire operand (loosely typed: tests also send invalid ones). */
export type OperandJson = Record<string, unknown>;

/** One graph on the wire. */
export interface GraphJson {
  operands: OperandJson[];
  operations: { type: string; inputs: number[]; outputs: number[] }[];
  inputIndexes: number[];
  outputIndexes: number[];
}

/** A model on the wire: its main graph and the subgraphs it references. */
export interface ControlFlowModel extends GraphJson {
  referenced?: GraphJson[];
}

/** A float32 [1] operand; constants carry their value. */
export function scalarTensor(lifetime: string, value?: number) {
  return float32Tensor([1], lifetime, value === undefined ? undefined : [value]);
}

/** A TENSOR_BOOL8 [1] operand (a condition). */
export function condition(lifetime: string) {
  return { type: "TENSOR_BOOL8", dimensions: [1], scale: 0, zeroPoint: 0, lifetime };
}

/** A SUBGRAPH operand naming referenced subgraph `k`. */
export function subgraph(k: number) {
  return {
    type: "SUBGRAPH",
    dimensions: [],
    scale: 0,
    zeroPoint: 0,
    lifetime: "SUBGRAPH",
    subgraph: k,
  };
}

/** A graph computing out = a <type> b (ADD, MUL, ...) on float32 tensors of `dimensions`. */
export function binaryGraph(type: string, dimensions: number[]): GraphJson {
  return {
    operands: [
      float32Tensor(dimensions, "MODEL_INPUT"),
      float32Tensor(dimensions, "MODEL_INPUT"),
      int32Scalar(0),
      float32Tensor(dimensions, "MODEL_OUTPUT"),
    ],
    operations: [{ type, inputs: [0, 1, 2], outputs: [3] }],
    inputIndexes: [0, 1],
    outputIndexes: [3],
  };
}

/**
 * out = cond ? x + y : x * y, on float32 [2] inputs; `outputDimensions` [0] leaves the
 * output's shape to execution.
 */
export function ifAddOrMul(outputDimensions: number[] = [2]): ControlFlowModel {
  return {
    operands: [
      condition("MODEL_INPUT"),
      subgraph(0),
      subgraph(1),
      float32Tensor([2], "MODEL_INPUT"),
      float32Tensor([2], "MODEL_INPUT"),
      float32Tensor(outputDimensions, "MODEL_OUTPUT"),
    ],
    operations: [{ type: "IF", inputs: [0, 1, 2, 3, 4], outputs: [5] }],
    inputIndexes: [0, 3, 4],
    outputIndexes: [5],
    referenced: [binaryGraph("ADD", [2]), binaryGraph("MUL", [2])],
  };
}

/** A condition subgraph over `count` float32 [1] inputs: out = input[a] <type> input[b]. */
export function comparisonGraph(count: number, type: string, a: number, b: number): GraphJson {
  const inputs = Array.from({ length: count }, (_, i) => i);
  return {
    operands: [...inputs.map(() => scalarTensor("MODEL_INPUT")), condition("MODEL_OUTPUT")],
    operations: [{ type, inputs: [a, b], outputs: [count] }],
    inputIndexes: inputs,
    outputIndexes: [count],
  };
}

/**
 * Fibonacci by WHILE: (a, b) input-output from (0, 1), counter i state-only from 0, n
 * input-only; while i < n: (a, b, i) = (b, a + b, i + 1). Outputs (F(n), F(n + 1)).
 */
export function whileFibonacci(): ControlFlowModel {
  return {
    operands: [
      subgraph(0),
      subgraph(1),
      scalarTensor("CONSTANT_COPY", 0),
      scalarTensor("CONSTANT_COPY", 1),
      scalarTensor("CONSTANT_COPY", 0),
      scalarTensor("MODEL_INPUT"),
      scalarTensor("MODEL_OUTPUT"),
      scalarTensor("MODEL_OUTPUT"),
    ],
    operations: [{ type: "WHILE", inputs: [0, 1, 2, 3, 4, 5], outputs: [6, 7] }],
    inputIndexes: [5],
    outputIndexes: [6, 7],
    referenced: [
      comparisonGraph(4, "LESS", 2, 3),
      {
        operands: [
          scalarTensor("MODEL_INPUT"), // a
          scalarTensor("MODEL_INPUT"), // b
          scalarTensor("MODEL_INPUT"), // i
          scalarTensor("MODEL_INPUT"), // n
          scalarTensor("CONSTANT_COPY", 0),
          scalarTensor("CONSTANT_COPY", 1),
          int32Scalar(0),
          scalarTensor("MODEL_OUTPUT"), // b
          scalarTensor("MODEL_OUTPUT"), // a + b
          scalarTensor("MODEL_OUTPUT"), // i + 1
        ],
        operations: [
          { type: "ADD", inputs: [1, 4, 6], outputs: [7] },
          { type: "ADD", inputs: [0, 1, 6], outputs: [8] },
          { type: "ADD", inputs: [2, 5, 6], outputs: [9] },
        ],
        inputIndexes: [0, 1, 2, 3],
        outputIndexes: [7, 8, 9],
      },
    ],
  };
}

/**
 * Sum of powers by nested WHILE: sum = x + x^2 + ... + x^n. The outer loop (k from 1 while
 * k <= n) adds x^k, which an inner WHILE computes (p from 1, j from 0, while j < k: p *= x).
 */
export function whileSumOfPowers(): ControlFlowModel {
  const four = [0, 1, 2, 3];
  return {
    operands: [
      subgraph(0),
      subgraph(1),
      scalarTensor("CONSTANT_COPY", 0), // sum
      scalarTensor("CONSTANT_COPY", 1), // k
      scalarTensor("MODEL_INPUT"), // n
      scalarTensor("MODEL_INPUT"), // x
      scalarTensor("MODEL_OUTPUT"),
    ],
    operations: [{ type: "WHILE", inputs: [0, 1, 2, 3, 4, 5], outputs: [6] }],
    inputIndexes: [4, 5],
    outputIndexes: [6],
    referenced: [
      comparisonGraph(4, "LESS_EQUAL", 1, 2),
      {
        operands: [
          ...four.map(() => scalarTensor("MODEL_INPUT")), // sum, k, n, x
          subgraph(2),
          subgraph(3),
          scalarTensor("CONSTANT_COPY", 1), // p
          scalarTensor("CONSTANT_COPY", 0), // j
          scalarTensor("TEMPORARY_VARIABLE"), // x^k
          scalarTensor("CONSTANT_COPY", 1),
          int32Scalar(0),
          scalarTensor("MODEL_OUTPUT"), // sum + x^k
          scalarTensor("MODEL_OUTPUT"), // k + 1
        ],
        operations: [
          { type: "WHILE", inputs: [4, 5, 6, 7, 1, 3], outputs: [8] },
          { type: "ADD", inputs: [0, 8, 10], outputs: [11] },
          { type: "ADD", inputs: [1, 9, 10], outputs: [12] },
        ],
        inputIndexes: four,
        outputIndexes: [11, 12],
      },
      comparisonGraph(4, "LESS", 1, 2),
      {
        operands: [
          ...four.map(() => scalarTensor("MODEL_INPUT")), // p, j, k, x
          scalarTensor("CONSTANT_COPY", 1),
          int32Scalar(0),
          scalarTensor("MODEL_OUTPUT"), // p * x
          scalarTensor("MODEL_OUTPUT"), // j + 1
        ],
        operations: [
          { type: "MUL", inputs: [0, 3, 5], outputs: [6] },
          { type: "ADD", inputs: [1, 4, 5], outputs: [7] },
        ],
        inputIndexes: four,
        outputIndexes: [6, 7],
      },
    ],
  };
}

/**
 * An IF inside a WHILE body: acc from 0, i from 0, while i < n: acc = i < 3 ? acc + x :
 * acc * x; i += 1. The branch constant 3 lives in the body subgraph.
 */
export function whileWithIf(): ControlFlowModel {
  const four = [0, 1, 2, 3];
  return {
    operands: [
      subgraph(0),
      subgraph(1),
      scalarTensor("CONSTANT_COPY", 0), // acc
      scalarTensor("CONSTANT_COPY", 0), // i
      scalarTensor("MODEL_INPUT"), // n
      scalarTensor("MODEL_INPUT"), // x
      scalarTensor("MODEL_OUTPUT"),
    ],
    operations: [{ type: "WHILE", inputs: [0, 1, 2, 3, 4, 5], outputs: [6] }],
    inputIndexes: [4, 5],
    outputIndexes: [6],
    referenced: [
      comparisonGraph(4, "LESS", 1, 2),
      {
        operands: [
          ...four.map(() => scalarTensor("MODEL_INPUT")), // acc, i, n, x
          scalarTensor("CONSTANT_COPY", 3),
          condition("TEMPORARY_VARIABLE"),
          subgraph(2),
          subgraph(3),
          scalarTensor("CONSTANT_COPY", 1),
          int32Scalar(0),
          scalarTensor("MODEL_OUTPUT"), // next acc
          scalarTensor("MODEL_OUTPUT"), // i + 1
        ],
        operations: [
          { type: "LESS", inputs: [1, 4], outputs: [5] },
          { type: "IF", inputs: [5, 6, 7, 0, 3], outputs: [10] },
          { type: "ADD", inputs: [1, 8, 9], outputs: [11] },
        ],
        inputIndexes: four,
        outputIndexes: [10, 11],
      },
      binaryGraph("ADD", [1]),
      binaryGraph("MUL", [1]),
    ],
  };
}

/**
 * A WHILE whose body grows its input-output tensor: x (float32, length known only at
 * execution) gets a 7 appended while i < n. Output shape [length(x) + n].
 */
export function whileGrowing(): ControlFlowModel {
  const vector = (lifetime: string) => float32Tensor([0], lifetime);
  return {
    operands: [
      subgraph(0),
      subgraph(1),
      vector("MODEL_INPUT"),
      scalarTensor("CONSTANT_COPY", 0),
      scalarTensor("MODEL_INPUT"),
      vector("MODEL_OUTPUT"),
    ],
    operations: [{ type: "WHILE", inputs: [0, 1, 2, 3, 4], outputs: [5] }],
    inputIndexes: [2, 4],
    outputIndexes: [5],
    referenced: [
      {
        operands: [
          vector("MODEL_INPUT"),
          scalarTensor("MODEL_INPUT"),
          scalarTensor("MODEL_INPUT"),
          condition("MODEL_OUTPUT"),
        ],
        operations: [{ type: "LESS", inputs: [1, 2], outputs: [3] }],
        inputIndexes: [0, 1, 2],
        outputIndexes: [3],
      },
      {
        operands: [
          vector("MODEL_INPUT"),
          scalarTensor("MODEL_INPUT"),
          scalarTensor("MODEL_INPUT"),
          scalarTensor("CONSTANT_COPY", 7),
          int32Scalar(0),
          vector("MODEL_OUTPUT"),
          scalarTensor("CONSTANT_COPY", 1),
          scalarTensor("MODEL_OUTPUT"),
        ],
        operations: [
          { type: "CONCATENATION", inputs: [0, 3, 4], outputs: [5] },
          { type: "ADD", inputs: [1, 6, 4], outputs: [7] },
        ],
        inputIndexes: [0, 1, 2],
        outputIndexes: [5, 7],
      },
    ],
  };
}

/** A WHILE that never ends: while x == x: x = x + 0. */
export function whileForever(): ControlFlowModel {
  return {
    operands: [
      subgraph(0),
      subgraph(1),
      scalarTensor("MODEL_INPUT"),
      scalarTensor("MODEL_OUTPUT"),
    ],
    operations: [{ type: "WHILE", inputs: [0, 1, 2], outputs: [3] }],
    inputIndexes: [2],
    outputIndexes: [3],
    referenced: [
      comparisonGraph(1, "EQUAL", 0, 0),
      {
        operands: [
          scalarTensor("MODEL_INPUT"),
          scalarTensor("CONSTANT_COPY", 0),
          int32Scalar(0),
          scalarTensor("MODEL_OUTPUT"),
        ],
        operations: [{ type: "ADD", inputs: [0, 1, 2], outputs: [3] }],
        inputIndexes: [0],
        outputIndexes: [3],
      },
    ],
  };
}
