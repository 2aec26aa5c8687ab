/**
 * The one WebAssembly memory the SIMD kernels of a realm (a worker, the main thread) share:
 * long-lived regions for packed weights, owned by bound kernels and returned when those
 * are garbage collected, and above them a scratch area that each kernel call uses for its
 * input and output copies (kernel calls never nest, so one scratch area serves all).
 *
 * The memory is shared (a SharedArrayBuffer): compute lanes (`compute_lanes.ts`) run the
 * same kernels on it from other threads, and views into it stay valid when it grows.
 */
import { SHARED_MEMORY_MAX_PAGES } from "./wasm_assembler.ts";

const PAGE_BYTES = 65536;
const ALIGNMENT = 64;

function align(n: number): number {
  return Math.ceil(n / ALIGNMENT) * ALIGNMENT;
}

/** A first-fit allocator over a growable WebAssembly memory. */
export class WasmHeap {
  readonly memory: WebAssembly.Memory = new WebAssembly.Memory({
    initial: 1,
    maximum: SHARED_MEMORY_MAX_PAGES,
    shared: true,
  });
  /** Buffer objects of the memory that views were made on (renewed when it grows). */
  readonly #buffers = new WeakSet<ArrayBufferLike>();
  #f32 = new Float32Array(this.buffer());
  /** Free regions below `#top`, by offset. */
  #free: { offset: number; size: number }[] = [];
  #sizes = new Map<number, number>();
  /** End of the allocated regions; the scratch area starts here. Offset 0 stays unused. */
  #top = ALIGNMENT;
  readonly #registry = new FinalizationRegistry<number>((offset) => this.release(offset));
  /** The region of each owner of {@link allocateFor}, until it is released. */
  readonly #owned = new WeakMap<object, number>();

  /** A float32 view of the whole memory (renewed after the memory grows). */
  get f32(): Float32Array {
    return this.#f32;
  }

  /** The memory's current buffer, for views that kernels may then address in place. */
  buffer(): SharedArrayBuffer {
    const buffer = this.memory.buffer as unknown as SharedArrayBuffer;
    this.#buffers.add(buffer);
    return buffer;
  }

  /**
   * The byte address of `view` in this memory when it is a view made on {@link buffer}
   * (kernels then read or write it in place), else undefined.
   */
  addressOf(view: ArrayBufferView): number | undefined {
    return this.#buffers.has(view.buffer) ? view.byteOffset : undefined;
  }

  /** Bytes allocated to long-lived regions (including free holes below the top). */
  get allocatedBytes(): number {
    return this.#top;
  }

  #ensure(bytes: number): void {
    const have = this.#f32.byteLength;
    if (bytes <= have) return;
    // Only this thread grows the memory (lanes never do), so the view is renewed here; a
    // shared memory's buffer object is renewed when it grows, and the old one stays valid.
    this.memory.grow(Math.ceil((bytes - have) / PAGE_BYTES));
    this.#f32 = new Float32Array(this.buffer());
  }

  /**
   * A long-lived region of `bytes` (64-byte aligned); throws a RangeError when the memory
   * cannot grow.
   */
  allocate(bytes: number): number {
    const size = align(Math.max(bytes, 1));
    const i = this.#free.findIndex((f) => f.size >= size);
    let offset: number;
    if (i >= 0) {
      const hole = this.#free[i];
      offset = hole.offset;
      if (hole.size === size) this.#free.splice(i, 1);
      else this.#free[i] = { offset: hole.offset + size, size: hole.size - size };
    } else {
      this.#ensure(this.#top + size);
      offset = this.#top;
      this.#top += size;
    }
    this.#sizes.set(offset, size);
    return offset;
  }

  /**
   * Allocates a region that is released once `owner` is garbage collected, or by
   * {@link releaseFor} (one region per owner).
   */
  allocateFor(owner: object, bytes: number): number {
    const offset = this.allocate(bytes);
    this.#registry.register(owner, offset, owner);
    this.#owned.set(owner, offset);
    return offset;
  }

  /** The region of `owner` (see {@link allocateFor}), if it has one. */
  regionOf(owner: object): number | undefined {
    return this.#owned.get(owner);
  }

  /** Releases the region of `owner` now (see {@link allocateFor}). */
  releaseFor(owner: object): void {
    const offset = this.#owned.get(owner);
    if (offset === undefined) return;
    this.#owned.delete(owner);
    this.#registry.unregister(owner);
    this.release(offset);
  }

  /** Returns a region to the heap, merging it with free neighbours. */
  release(offset: number): void {
    const size = this.#sizes.get(offset);
    if (size === undefined) return;
    this.#sizes.delete(offset);
    this.#free.push({ offset, size });
    this.#free.sort((a, b) => a.offset - b.offset);
    const merged: { offset: number; size: number }[] = [];
    for (const f of this.#free) {
      const last = merged[merged.length - 1];
      if (last && last.offset + last.size === f.offset) last.size += f.size;
      else merged.push({ ...f });
    }
    const last = merged[merged.length - 1];
    if (last && last.offset + last.size === this.#top) {
      this.#top = last.offset;
      merged.pop();
    }
    this.#free = merged;
  }

  /**
   * The byte offset of a scratch area of `bytes`, valid until the next allocation or
   * scratch request; throws a RangeError when the memory cannot grow.
   */
  scratch(bytes: number): number {
    this.#ensure(this.#top + align(bytes));
    return this.#top;
  }
}

let realm: WasmHeap | undefined;

/** The heap of this realm (thread), which its kernels and executables share. */
export function realmHeap(): WasmHeap {
  return realm ??= new WasmHeap();
}
