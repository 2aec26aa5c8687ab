/**
 * HAL 1.3's signed quantized CTS cases, derived as Android's 1.3 CTS derives them from the
 * uint8 ones: every TENSOR_QUANT8_ASYMM operand becomes TENSOR_QUANT8_ASYMM_SIGNED with
 * zero point - 128, and every value of such an operand (constants, example inputs and
 * expected outputs) - 128. The case's name gets the suffix `_signed`. PAD_V2's pad value, an
 * INT32 in its input's quantized units, moves with them. Cases of operations that NNAPI
 * gives no signed form are not derived: HASHTABLE_LOOKUP, LSH_PROJECTION,
 * QUANTIZED_16BIT_LSTM, and CAST between quant8 and another type (CAST casts stored values,
 * so shifting them changes the answer; HAL 1.3 only adds signed-to-signed).
 */
import type { CtsCase } from "./vectors.ts";

const UNSIGNED = "TENSOR_QUANT8_ASYMM";
const SIGNED = "TENSOR_QUANT8_ASYMM_SIGNED";

type Operand = CtsCase["model"]["operands"][number] & {
  zeroPoint?: number;
  value?: number[];
};

/** Values of a converted operand, shifted by -128. */
function shift(values: readonly number[]): number[] {
  return values.map((v) => v - 128);
}

/** Shifts the values of the converted operands in an example's operand map. */
function shiftMap(
  map: Record<string, number[]>,
  converted: ReadonlySet<number>,
): Record<string, number[]> {
  return Object.fromEntries(
    Object.entries(map).map(([k, v]) => [k, converted.has(Number(k)) ? shift(v) : v]),
  );
}

/** Operations without a TENSOR_QUANT8_ASYMM_SIGNED form in NNAPI. */
const NO_SIGNED_FORM = new Set(["HASHTABLE_LOOKUP", "LSH_PROJECTION", "QUANTIZED_16BIT_LSTM"]);

/** Whether NNAPI defines the signed form of every operation of the case. */
function hasSignedForm(c: CtsCase, operands: readonly Operand[]): boolean {
  return c.model.operations.every((op) => {
    if (NO_SIGNED_FORM.has(op.type)) return false;
    if (op.type !== "CAST") return true;
    const quant = [...op.inputs, ...op.outputs].map((i) => operands[i].type === UNSIGNED);
    return quant.every((q) => q) || quant.every((q) => !q);
  });
}

/** The operands of PAD_V2 pad values whose input is converted: they shift with it. */
function shiftedScalars(c: CtsCase, converted: ReadonlySet<number>): Set<number> {
  const scalars = new Set<number>();
  for (const op of c.model.operations) {
    if (op.type === "PAD_V2" && converted.has(op.inputs[0])) scalars.add(op.inputs[2]);
  }
  return scalars;
}

/** The signed form of a case; undefined when it has no TENSOR_QUANT8_ASYMM operand. */
export function toSignedCase(c: CtsCase): CtsCase | undefined {
  const operands = c.model.operands as Operand[];
  const converted = new Set<number>();
  operands.forEach((o, i) => {
    if (o.type === UNSIGNED) converted.add(i);
  });
  if (converted.size === 0 || !hasSignedForm(c, operands)) return undefined;
  const scalars = shiftedScalars(c, converted);
  const moved = new Set([...converted, ...scalars]);
  return {
    ...c,
    name: `${c.name}_signed`,
    introducedIn: c.introducedIn === null ? null : "V1_3",
    model: {
      ...c.model,
      operands: operands.map((o, i) => {
        if (scalars.has(i) && Array.isArray(o.value)) return { ...o, value: shift(o.value) };
        if (!converted.has(i)) return o;
        const signed: Operand = { ...o, type: SIGNED, zeroPoint: (o.zeroPoint ?? 0) - 128 };
        if (Array.isArray(o.value)) signed.value = shift(o.value);
        return signed;
      }),
    },
    examples: c.examples.map((e) => ({
      ...e,
      inputs: shiftMap(e.inputs, moved),
      outputs: shiftMap(e.outputs, moved),
    })),
  };
}
