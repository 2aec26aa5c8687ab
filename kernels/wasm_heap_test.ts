import { notStrictEqual, ok, strictEqual } from "node:assert/strict";
import { WasmHeap } from "./wasm_heap.ts";

Deno.test("WasmHeap reuses released regions and keeps scratch above the live ones", () => {
  const heap = new WasmHeap();
  const a = heap.allocate(100);
  const b = heap.allocate(1000);
  const c = heap.allocate(10);
  ok(a > 0 && a % 64 === 0 && b % 64 === 0 && c % 64 === 0, "regions are 64-byte aligned");
  ok(a + 100 <= b && b + 1000 <= c, "regions do not overlap");
  ok(heap.scratch(16) >= c + 10, "scratch starts above the last region");
  heap.release(b);
  strictEqual(heap.allocate(500), b, "a released hole is reused first-fit");
  heap.release(c);
  const top = heap.allocatedBytes;
  ok(top <= c, "releasing the last region lowers the top");
  heap.release(a);
  heap.release(b);
  strictEqual(heap.allocatedBytes, 64, "everything released leaves only the reserved bytes");
});

Deno.test("WasmHeap grows its memory for scratch and renews its float view", () => {
  const heap = new WasmHeap();
  const before = heap.f32;
  const base = heap.scratch(1 << 20);
  const after = heap.f32;
  notStrictEqual(after, before);
  ok(after.length * 4 >= base + (1 << 20));
  after[(base >> 2) + 1000] = 7;
  strictEqual(heap.f32[(base >> 2) + 1000], 7);
});
