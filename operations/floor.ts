/** FLOOR: the largest integer not above x (float32 since V1_0, float16 since V1_2). */
import { floorFloat32 } from "../kernels/elementwise_unary.ts";
import { unaryOperation } from "./common/unary.ts";
import type { OperationDefinition } from "./operation.ts";

/** FLOOR, elementwise on float tensors of rank at most 4. */
export const floor: OperationDefinition<"FLOOR"> = unaryOperation({
  type: "FLOOR",
  float: floorFloat32,
});
