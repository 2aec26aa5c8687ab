/**
 * HAL 1.3's signed quantized CTS cases, derived as Android's 1.3 CTS derives them from the
 * uint8 ones: every TENSOR_QUANT8_ASYMM operand becomes TENSOR_QUANT8_ASYMM_SIGNED with
 * zero point - 128, and every value of such an operand (constants, example inputs and
 * expected outputs) - 128. The case's name gets the suffix `_signed`.
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

/** The signed form of a case; undefined when it has no TENSOR_QUANT8_ASYMM operand. */
export function toSignedCase(c: CtsCase): CtsCase | undefined {
  const operands = c.model.operands as Operand[];
  const converted = new Set<number>();
  operands.forEach((o, i) => {
    if (o.type === UNSIGNED) converted.add(i);
  });
  if (converted.size === 0) return undefined;
  return {
    ...c,
    name: `${c.name}_signed`,
    introducedIn: c.introducedIn === null ? null : "V1_3",
    model: {
      ...c.model,
      operands: operands.map((o, i) => {
        if (!converted.has(i)) return o;
        const signed: Operand = { ...o, type: SIGNED, zeroPoint: (o.zeroPoint ?? 0) - 128 };
        if (Array.isArray(o.value)) signed.value = shift(o.value);
        return signed;
      }),
    },
    examples: c.examples.map((e) => ({
      ...e,
      inputs: shiftMap(e.inputs, converted),
      outputs: shiftMap(e.outputs, converted),
    })),
  };
}
