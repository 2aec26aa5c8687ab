/**
 * The hand-written text of docs/performance.md: what profiles of the REST path found, what
 * was found and changed for speed, the speed issue's targets, and what earlier runs add to
 * the verdicts. `report.ts` places each beside the tables it explains.
 */

/**
 * Where a REST request's time goes: V8 profiles of the server under wrk (64 connections, the
 * tiny model) and of the app called in process, per-thread CPU from /proc, taken by hand
 * (2026-11-28).
 */
export const REST_PROFILE =
  `Why each microsecond counts more than itself here (2026-11-29, the session after the burst
polling window): a Hono echo given a busy loop of 0, 5, 10 and 20 µs per request answered
87.9 k, 57.0 k, 40.3 k and 23.4 k requests/s under the same wrk, 11.4, 17.6, 24.8 and 42.7 µs a
request: each microsecond of the serving thread costs 1.2-1.8 µs of a request. The slower the
server, the more often an answer finds wrk's thread asleep and pays its wake-up: wrk switched
context 0.18 times a request against the echo and 0.75 against nnserve (17.2 k times a second
at 23 k requests/s). Changed then, found by \`perf\` of the serving thread: a typed array
costs about 0.3 µs to make in this Deno, and a tiny execution made three; plans run on the
driver's thread now decode JSON inputs into arrays they keep between runs
(driver/execution/input_arrays.ts: a run there is synchronous from its inputs' decoding to its
outputs' copy, and a test fails if a wait comes between). An awaited layer costs about half a
microsecond under load: \`Driver.execute\`, the runner and its run were three async functions
and are one, and the route awaits a JSON body's promise itself. On an open service the lane
reads no Authorization header; step timing reads the clock once a step; only the outcome
histograms (whose last observation the statistics report) read \`Date.now\` per observation.
Against the code before, nnserve in alternating rounds under wrk: 28.8 k -> 31.1 k
executions/s (the per-round ratios' median 1.11; 9 rounds of 10 faster) and, in a slow spell,
24.0 k -> 26.0 k (1.14); the serving thread's CPU per request 34.6 -> 31.9 µs and 45.6 ->
38.5 µs. The \`/v2\` JSON inference of the same model (measured beside it above, from this session on) took
these and changes of its own: its body was read piece by piece to enforce the size cap (a
declared length is now checked and the body read at once), its plain form
(\`{"inputs": [{"name", "shape", "datatype", "data"}]}\`) skips zod, whose output would equal
it, and its served version comes at once from a kept lookup: 12.6 k -> 20.8 k inferences/s in
alternating rounds (the rounds' median ratio 1.53), 79 -> 52 µs of the serving thread.
The serving handler and the connection guard no longer await the app's answer in async
functions of their own (they watch it settle on the side): 30.9 k -> 32.2 k (1.04, every round
at or above 1.00). With API keys (\`NNSERVE_API_KEYS\`) each request hashes its bearer key:
Web Crypto's \`digest\` answered through a thread pool in 30-45 µs, and \`node:crypto\`'s
hash, 2 µs in a loop, cost the serving thread about 11 µs a request under load (an A/B with
the hash skipped: 22.4 k against 29.9 k); a SHA-256 of the service's own in arrays made once
(routes/sha256.ts, 0.5 µs) took a service with keys from 19.3 k to 27.9 k executions/s, an
open one's rate. From the start of the session to its end, in alternating rounds: \`/v1\`
24.6 k -> 30.0 k (the serving thread 40.5 -> 35.1 µs a request), \`/v2\` JSON 14.0 k -> 23.9 k
(72.4 -> 40.9 µs), \`/v1\` with a key 22.5 k -> 28.9 k (44.4 -> 35.0 µs).

Changed before (2026-11-29, a session earlier): the access line is built from its fields' own
JSON (a string that needs no escaping is quoted as it is: six \`JSON.stringify\` calls into
the runtime were about 1.5% of the serving thread), the executions counter is found once per
status, inputs are checked and converted in one pass, runs start from a kept copy of their
constant and arena tensors (a view costs about half a microsecond to make), and element-wise
outputs under 128 elements run the reference kernel on \`cpu-simd\` (a SIMD call costs about
half a microsecond before its first element, the reference about 3 ns an element).
\`Driver.execute\` of the tiny model went from 6.4-6.8 to 5.2 µs in process, the laned request
from about 16 to 14.5 µs; awaiting only what is pending (a live compilation, its plan, the
binding and delivery of inline arguments come at once) took it to 4.3 µs. This bench now loads nnserve and the echo in turn, three rounds
each: one run of each had swung 0.14-0.22x with the host; rounds after these changes went
0.15-0.31x, their median 0.24-0.26x. Then the connection guard: it kept a WeakMap entry per
request (the request's connection, for \`clientLeft\`, which only ONNX imports ask), and every
entry is an ephemeron the garbage collector must trace: about a tenth of tiny-model
throughput (with the guard off altogether 28.5-30.0 k against 25.3-28.2 k). Its word now
rides on the request's \`ServeHandlerInfo\` (Hono's \`c.env\`), and a connection's record is
found by the client's address text and port without building its key: against the code
before, by round under wrk, 1.02-1.21x and then 0.99-1.13x. Tried without gain: writing the
access log a batch per 50 ms or 64 KB instead of per turn of the event loop (0.89-1.13x by
round, median 0.99). The rest is as below: each answer still wakes wrk's idle thread while
the server is the slower side, and the service's JavaScript is many small costs.

Where a request's time goes now (2026-11-29: \`perf\` of the serving thread under wrk
with V8's builtins named from its perf map, V8 CPU profiles, the app called in process). The
serving thread is the limit: busy all the time while the other core is a third idle. Its time
under wrk: the kernel a quarter, nearly all of it the answer's \`send\` (loopback delivery and
waking wrk's thread: half of it is the wake-up, an inter-processor interrupt on this virtual
machine, paid on every answer while the server is the slower side); Deno's Rust and V8's
runtime with no JavaScript on the stack a sixth (the event loop, hyper, collections); Deno's
own serve code 6%; the service's JavaScript the rest. That JavaScript costs about three times
what it costs called in process: the app called in process inside a Deno.serve handler (the
socket's request ignored) served 7.3 k requests/s where in process it took 35 µs, while five
in-process calls of a Hono echo app (30 µs) served 19.8 k and 35 µs of arithmetic 17.3 k in
the same handler. Large code per request suffers, small loops do not; an in-process loop
also ran 1.5x slower while the other core served wrk and an echo. In this Deno a typed array
costs 0.2-0.6 µs to make (each is a calloc'd backing store: V8 keeps none on its heap here),
a Response's headers given in its init about a microsecond each beyond the first, and
\`toISOString\` half a microsecond.

Changed (2026-11-29): \`POST /v1/compilations/{id}/executions\` and \`/v2\` inference take a
lane past Hono (routes/execution_lane.ts): the access log, the key check and the declared
body limit run from the same functions as the middleware, then the route's own handler; the
router keeps queries, escaped paths, chunked bodies and CORS, and a test compares both paths'
answers, log lines and refusal counts. Plain JSON bodies (\`{"inputs": [{"data": [...]}]}\`)
skip zod's parse, which gives the same value; execution metrics find their six series once
per compilation and client instead of by labels each run; an execution that refers to no
memory or buffer is bound without a promise per argument; tensors are allocated as one typed
array instead of a buffer and a view; outputs become JSON numbers in a loop (\`Array.from\` of
a typed array goes through its iterator: 27 µs for 1000 floats against 2.3); log times are
formatted once a millisecond. In process the request went from 35 to 20 µs and
\`Driver.execute\` from 10-11 to 6. Under wrk, in alternating runs against the code before:
11.8-17.9 k executions/s against 8.0-8.9 k, with the Hono echo at 60-86 k: 0.19-0.22x against
0.10-0.11x (the access line at the default level, \`info\`, is 5-20% of it). The serving
thread then spends a third of its time in the kernel, the service's JavaScript 44%. A third of
the echo stays out of reach here: each answer still wakes wrk's idle thread, and the rest is
many small costs (the access line, \`request.json\`, the response, the run), each 2-5%.

Where a request's time went before (2026-11-28: V8 CPU profiles of the server under
the same load and of the app called in process, and each thread's CPU time from /proc).
Under wrk the server's main thread is busy 96% of the time, the connection guard's worker
49% and wrk 24% of a core: the main thread is the limit, about 39 µs a request at 24.6 k
requests/s. JavaScript is about 21 µs of it (in process, without sockets): Hono's routing,
context and middleware 15% of it, zod 6%, the access log line and request id 6%, metrics 7%
(six histogram observations a request), \`performance.now\` 4%, garbage collection 6%, the
execution itself (arguments, the inline run of the plan, the ADD kernel) about a fifth; the
rest of the 39 µs is Deno's HTTP work and the sockets. Changed this session: the guard's
forwarding moved off the main thread into a worker of its own (it had been a quarter of the
main thread's samples: 17.4 k -> 20.5-21.7 k requests/s), the execution route no longer
validates its query and headers per request (26 -> 22 µs in process), and histograms find
their series without building a key string per observation (about 1 µs): 17.4 k -> 25.8-27.1 k
requests/s in all. The Hono echo does the JSON and the routing only, in about 8 µs of one
thread: no single part of the rest is the 1.5x between today's rate and a third of the
echo's. For scale: a Deno.serve handler that reads the same body and answers a fixed one
serves 143 k requests/s here, and 63 k through the guard.

Timeouts without the guard, measured later that day: Deno 2.9's \`node:http\` does enforce
\`headersTimeout\` (a 408 when a request head is late) and \`keepAliveTimeout\`, so it could take
the guard's place, and a WebSocket over it (npm \`ws\`) echoes in 65 µs like Deno's own (66).
But the app served through it (Hono's Node adapter, \`@hono/node-server\`) answered 11.6-12.5 k
requests/s against 19.9-21.6 k through Deno.serve and the guard in the same runs, its main
thread at 81-88 µs a request against 42: its HTTP layer is JavaScript over Deno's sockets.
A Unix socket instead of loopback TCP between the guard and the server made a forwarded
WebSocket round trip no faster (82-88 against 83-90 µs with a bare forwarder): the guard's cost
is the two extra thread wake-ups of each round trip, not the TCP stack. A burst of the tiny
ADD model answered in 100-124 µs one at a time with the guard and 68-83 µs without it; the
server's JavaScript is about 16 µs of a round trip and the client's about 8 (its socket write
10 more), so under 100 µs with the guard on needs the hop gone, not a trim.

The guard stood in front of the server until later that day: a worker accepted each
connection and forwarded its bytes over loopback to a private Deno.serve. That hop cost
every request two thread wake-ups, which on this virtual machine take 40-60 µs each when
the thread sleeps: a 16-byte POST answered in 0.31 ms through it against 0.11 ms directly
(a forwarder on the serving thread itself added 0.05 ms, but took a quarter of that thread
under load). The guard now watches Deno.serve's own connections instead (libc through FFI:
the kernel's bytes received and time since the last byte per connection, joined with the
requests the handler saw; a connection past a timeout is shut down). Measured in the same
runs against the forwarding guard, on a host running at about half its usual speed: the
PP-OCR classifier over HTTP (binary, one thread) 1.42-1.57 ms against 1.56-1.63 (the
onnxruntime-node server 1.34-1.39), a burst round trip of the tiny ADD model 169 µs against
190, \`/v2\` over HTTP 357 against 438 µs; tiny-model REST under wrk unchanged (the serving
thread is the limit either way).
Measured again a session later, on a slower host (the Hono echo at 63-77 k requests/s, nnserve
at 6-10 k): the same app costs 27-35 µs a request called in process and about 113 µs of the
serving thread under wrk. Neither HTTP nor work as such explains the gap: a Deno.serve handler
that reads the body and answers a fixed JSON serves 75-86 k requests/s here (12 µs a request),
and with 30 µs of arithmetic added 19.8 k (50 µs). Under socket load the app's own functions
run 2-4x slower than in process (toJsonNumbers 0.6 µs in process, 2.5 µs under wrk), and each
answer's send costs 3x more while the server is the slower side (it then wakes wrk every time).
A handler that bypassed Hono (the route matched by a regular expression, zod's
\`ExecutionRequest\`, \`Driver.execute\`, the JSON answer, the access line and the duration
histogram) served 10.1-13.1 k (11.7-12.3 k with the access line and the histogram) against the
app's 6.7-8.4 k in the same runs, and 47-49 k without the execution: \`Driver.execute\` of the
inline plan takes 40-60 µs of the serving thread under load, against about 8 µs in process,
where the plan's run alone (\`Executable.run\` called from the same handler: 39-47 k requests/s
against 15-17 k through \`Driver.execute\`, in turns) takes a few. Of the difference, leaving out
the execution metrics raised the rate 3-15%, and the chain of awaits is a share: 20 more
awaited async calls cost that handler 10-14 µs a request under load. A third of the echo (21-25
k here) therefore needs the execution path itself to cost a fraction of what it costs under
load, not only a leaner HTTP layer.`;

/** What profiling found and what changed (kept with the tables it explains). */
export const FINDINGS = `## What was found and changed

- **Converted CNNs** ran every convolution in NNAPI's NCHW mode (two transposes per image
  operation inside the SIMD kernels) and every ReLU/Clip as an operation of its own on the
  reference kernels. The converter now fuses activations into their producer and moves NCHW
  image operations (transposed convolutions too) to NHWC (\`converter/passes/\`):
  MobileNetV2 in process went from about 115 ms to 20 ms on one thread.
- **PaddleOCR's CNNs** (PP-LCNet backbones) spent most of their time in element-wise
  operations on the reference kernels: at 320x320 the detector took about 600 ms in process,
  506 of them in ADD, MUL and DIV (a function call per element that V8 could not inline once
  four operations shared the loop). Now the converter folds a constant scale and shift after
  a convolution into its weights (PP-LCNetV3's learnable affine blocks) and turns
  \`x * relu6(x + 3) / 6\` written out into HARD_SWISH; \`cpu-simd\` runs ADD, SUB, MUL and
  DIV (tensors, one value, or a per-channel row) and HARD_SWISH in WebAssembly SIMD, bit for
  bit with the reference, and TRANSPOSE_CONV_2D as one SIMD GEMM of its taps plus a scatter;
  MEAN over contiguous axes (global average pooling) no longer builds an index per element.
  In process, one thread: detector 600 -> about 60 ms, recognizer 690 -> about 56 ms,
  text-direction classifier 43 -> about 3 ms.
- **Attention and dynamically quantized models** (Moonshine's speech encoder: 1769
  operations for one second of audio): the reference unary math, comparisons and reductions
  still called a function per element (NEG of 46 K values took 1.1 ms, REDUCE_MIN 1.6 ms);
  each now has its own loop, and reductions fold whole rows. The products of two runtime
  tensors (attention's scores and values) ran on the reference FULLY_CONNECTED at 0.5
  GFLOP/s; \`cpu-simd\` now repacks such weights before each run and uses its GEMM. The SIMD
  arithmetic takes a block of trailing extents repeated over leading ones (a rotary table
  over the heads), and RESHAPE, SQUEEZE and EXPAND_DIMS of arena tensors share their input's
  bytes, so they copy nothing. In process, one thread: 97 -> 51 ms (onnxruntime-node: 5.3
  ms); the rest is about 1800 small operations.
- **TensorFlow.js's WebAssembly backend** (XNNPACK inside) is the third peer: MobileNetV2 is
  rebuilt from the same ONNX bytes as TensorFlow.js operations (NHWC, each convolution fused
  with its bias and ReLU6) and agrees with onnxruntime-node within 2e-7. Under Deno it runs
  on one thread only (it takes Node's path, where its threaded build is not offered), and the
  PaddleOCR graphs have operations the rebuild does not cover, so it has MobileNetV2 rows at
  one thread. There nnserve is 1.4x faster than it in process and 1.2x over HTTP with binary
  tensors (26.7 ms against 18.5 and 21.7 in this session's run).
- **Quant8 kernels**: quant8 CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED ran only on the
  reference kernels (Android 10 integer arithmetic, one scalar multiply-add at a time).
  \`cpu-simd\` now runs them in WebAssembly SIMD for uint8 and int8 operands and per-tensor or
  per-channel filters, bit for bit with the reference: the input is staged as \`x - zeroPoint\`
  (int16 pairs multiplied by \`i32x4.dot_i16x8_s\` for convolutions and fully connected layers,
  int32 per channel for depthwise ones), the sums are exact int32 in the float kernels' loop
  structure, and the requantization (\`MultiplyByQuantizedMultiplier\`) runs four channels at a
  time in 64-bit lanes. On MobileNet-v1 layers (\`deno task bench --filter quant8\`, one
  thread): 5-40x the reference kernels; 14x14x512 pointwise 2.2 ms (23 GMAC/s, the float32
  kernel 2.4 ms), but the 3x3/2 224x224 convolution 2.0 ms and the 112x112x32->64 pointwise
  3.3 ms against 0.85 and 1.45 ms in float32: on layers with few multiply-adds per value, the
  input staging (a JavaScript loop) and the requantization pass cost more than the 8-bit
  products save. Staging in SIMD is the next step.
- **Fused element-wise chains**: consecutive element-wise steps (PP-LCNetV3's HARD_SWISH,
  scale and shift: 24 chains in the detector, 39 in the recognizer) each wrote a whole tensor
  that the next one read back. The plan now marks runs of ADD, SUB, MUL, DIV, MINIMUM, MAXIMUM
  and HARD_SWISH on \`cpu-simd\` whose intermediates nothing else reads (\`driver/compilation/chain_fusion.ts\`),
  and each run is one generated WebAssembly loop that keeps four values in a register from the
  first operation to the last, bit for bit the steps one by one. A first version ran the
  unfused kernels block by block through an L1-sized buffer and was no faster (this CPU's
  caches hold these tensors); the register loop runs a three-operation chain 1.5-1.9x faster
  (102 K elements: 65 -> 43 us; 2 M: 1.3-1.6 -> 0.8 ms). The PaddleOCR models do not move
  measurably (element-wise work is now a small part of them).
- **Copies around every SIMD kernel call**: tensors were copied into the WebAssembly heap and
  out again. An executable's arena now lives in that heap and is reused by every run; the
  kernels read and write it in place (MobileNet v1 in process: 39.8 -> 30 ms).
- **Threads**: compute lanes (\`kernels/compute_lanes.ts\`) split GEMM row or channel bands and
  convolution row bands across cores on the shared memory; \`NNSERVE_THREADS\` is one budget
  that concurrent executions share. Element-wise calls of 128 K elements and more are split
  too, and the quant8 kernels like the float ones, but element-wise work is memory-bound here
  (ADD of 401 K floats: 0.127 -> 0.119 ms on two threads). Small calls (under 512 K
  multiply-adds) and the zero-padded input copies still run on one thread, which is why the
  CNNs gain less than GEMM from the second core.
- **Binary tensors over HTTP**: a framed body (\`Inference-Header-Content-Length\`, the
  KServe/Triton binary tensor extension's shape) or a single input's raw bytes; the body's
  bytes are transferred to the executor worker without a copy, and answers come back framed or
  raw. MobileNetV2's HTTP overhead went from 9-15 ms (base64 JSON) to 1-3 ms.
- **HTTP's floor grows with the bytes**: on this virtual machine's loopback, moving about
  1 MB up and 1 MB down between two processes takes 25 ms with a bare Deno.serve and fetch
  (curl measures the same), while 0.6 MB up and 4 KB down takes 3-4 ms. The detector's
  0.4 MB output and the recognizer's 1 MB output (40 x 6625 class scores) pay that too, so
  each model's table row has its own floor, measured in the same run.
- **Models as published ran on the reference kernels**: a model whose extents are given at
  execution (a symbolic batch, as nearly every exported model has it) was planned entirely on
  \`cpu-reference\`, because \`cpu-simd\` and the gpu took only shapes known at preparation:
  MobileNetV2 imported without \`?shape=\` answered in 444 ms against 3.2 ms for the
  onnxruntime-node server, and served 4 requests/s to 16 connections against 126. Now devices
  plan for what is known, weights are packed at preparation, and each executor binds the plan
  per set of input shapes at the first execution that brings it (kept for the 8 most recent;
  \`driver/execution/shape_bindings.ts\`): the rows "extents at execution" above run as fast
  as those with \`?shape=\`. The recognizer, whose reshapes and attention take several
  extents known only at execution, gets those shapes computed in the model (SHAPE, RANGE,
  BATCH_MATMUL) and runs as published as fast as with \`?shape=\` too.
- **SUSTAINED_SPEED spread plans over devices** (gpu, cpu-reference and cpu-simd alternating
  every one or two operations: MobileNetV2 120 ms against 27 ms): it now gets the latency
  plan, as NNAPI's runtime does; the cost model prices each operation at its device's measured
  speed for its kind of work (matrix products, windows, element-wise, data movement).
- **REST hot path** (V8 CPU profile under wrk): Hono's body limit touched the request body,
  which makes Deno hand it over as a stream; it is now decided from Content-Length (15 k ->
  18.6 k executions/s at 64 connections without the connection guard). What remains: the
  connection guard's loopback hop (about a quarter of the throughput: 8.9 k vs 12 k req/s at
  16 connections), the driver's execute path (about 17 us per request: several awaits and
  allocations), async zod validation (about 3 us), and Deno's HTTP stack. A later profile
  (the default log level, \`info\`, logs every request) found a tenth of the event loop in
  \`console.log\`'s one synchronous write per access line: the lines now leave a batch per
  turn of the event loop, one write each (11.0 k -> 16.8 k executions/s at 64 connections
  with the connection guard, 0.088x -> 0.137x of the Hono echo in the same runs). Later the
  executions and \`/v2\` inference routes took a lane past Hono's router and middleware (the
  same functions, routes/execution_lane.ts), plain JSON bodies skip zod and inline executions
  bind without promises: 0.10-0.11x -> 0.19-0.22x (2026-11-29, "REST throughput" above).

- **Native kernels through the onnxruntime device** (#31): nnserve's CPU plans now offer
  \`onnxruntime\` beside its own kernels. The partitioner hands it the runs of steps the
  exporter writes exactly (\`converter/onnx_export/\`), each run becomes an ONNX model and an
  onnxruntime session in the executors, and the rest stays on \`cpu-simd\` and
  \`cpu-reference\`. Rows "nnserve in process" are that default CPU plan; "nnserve in
  process, own kernels" are \`cpu-simd\` and \`cpu-reference\` alone (what every row was
  before). What it took beyond the exporter: the partitioner charged a device's copies as if
  they outlived a unit and searched every pair of memory spaces, which capped the search as a
  beam after 5-24 s on the recognizer and Moonshine; it now charges what executors do (each
  unit takes its inputs anew and hands back what later steps read) and plans them exactly in
  20-60 ms. The int32 shape arithmetic of models as published (SHAPE, GATHER, ADD, MUL,
  CONCATENATION, RESHAPE to a computed shape, RANGE, BATCH_MATMUL) is exported too, so the
  recognizer and Moonshine imported without \`?shape=\` run as one onnxruntime unit (before,
  23 SHAPE islands split the recognizer into dozens of units: 15.6 ms against 10.5).
  Sessions open in an executor while the compilation is prepared (opening one blocks its
  thread: 40-190 ms), one per thread count a run can borrow from \`NNSERVE_THREADS\`.
- **Moonshine's encoder at onnxruntime's speed**: its dynamic quantization was imported as
  the float operations that compute it (about 20 per DynamicQuantizeLinear, the products as
  float FULLY_CONNECTED of exact integers), Erf written out, attention split per head: 1823
  ONNX nodes where onnxruntime runs about 600 with fused int8 kernels, 2.1-2.9x its time.
  Now each dense layer \`quantize_dynamic\` writes is one DYNAMIC_QUANTIZE_FULLY_CONNECTED
  and Erf one ERF (nnserve extension operations: a scale chosen at execution has no NNAPI
  operand type), exported as onnxruntime's DynamicQuantizeMatMul (bit for bit the reference
  kernel) and Erf (fused into Gelu by its optimizer), and a MatMul of two runtime tensors is
  one BATCH_MATMUL: 773 NNAPI operations, and onnxruntime runs the exported model slightly
  faster than the original (an onnxruntime profile: 4.8 ms against 5.2 ms). \`cpu-simd\`
  runs the new dense layers on its float GEMM, exactly (the integer sums are checked to stay
  below 2^24 in float32).

`;

/** What the speed issue asked for and where it stands. */
export const SPEED_TARGETS = `## Targets of the speed issue

From the tables above, and from the runs of the session that wrote this text (the tables
move by tens of percent when the virtual machine's host is busy: rerun before trusting one
number):

- GEMM: at least 50% of one core's SIMD128 peak: met (80-86%). Two threads at least 1.8x
  one: met in the quiet runs (1.9x at 512^3 and 1024^3); a busy host pulls it lower.
- MobileNetV2 and the PaddleOCR CNNs over HTTP (binary) at most 2.5x onnxruntime-node:
  missed. onnxruntime-node runs them with native AVX-512 kernels and graph fusions (MobileNetV2
  at about 120 GFLOP/s effective); WebAssembly SIMD128 peaks near 50 GFLOP/s on this CPU, so
  MobileNetV2's 600 M flops take at least 11.8 ms there, more than 2.5x onnxruntime-node's
  4.5 ms: the target is below what 128-bit kernels can reach. The PaddleOCR models are 3-3.5x
  onnxruntime-node in process.
- At least 1.5x faster than onnxruntime-web at equal threads. One thread: MobileNetV2 met
  (1.5-2.2x in process, 1.5-1.9x over HTTP with binary tensors, across runs); the
  text-direction classifier is about as fast as onnxruntime-web in process and slower over
  HTTP (its run is 2-3 ms, so the HTTP floor decides); the detector and the recognizer are
  1.3-1.45x faster in process (missed), and over HTTP their 0.4 MB and 1 MB outputs add the
  floor of moving them (their HTTP overhead is at or below that floor). Two threads: missed.
  nnserve gains 20-25% from its second thread (MobileNetV2 in process 19.5 -> 15.3 ms),
  onnxruntime-web 45-55%: depthwise convolutions (split, but memory-bound) and element-wise
  operations (split from 128 K elements, memory-bound) gain little, and the zero-padded input
  copies and the calls under 512 K multiply-adds still run on one thread. A server's
  executor now starts its compute lane when it starts; before, a lane's worker took a second
  or more to start inside the executor (at the first split call), so a fresh server's first
  30-40 runs split nothing, most of a benchmark's runs. Every MobileNetV2 run now splits its 48
  large calls from the first.
- HTTP overhead with binary tensors at most 1 ms: missed for MobileNetV2 by the floor (1-3 ms
  measured, the floor of the same bytes 3-4 ms here): nnserve's own share is within the noise
  of that floor. With base64 JSON at most 5 ms: missed (9-15 ms: the encoding, the 0.8 MB
  JSON parse and string decode).
- Tiny-model REST at least 0.5x the Hono echo: \${REST_RATIO}, see above.
- A single burst round trip adds under 100 us to the kernel time: missed. \`deno task bench
  --filter burst\` (this session): a 3x3 CONV_2D on 1x32x32x3, one frame at a time, 207 us above
  the kernel per round trip (pipelined: 107 us per frame, 8.6x REST's throughput); the
  camera-sized quant8 model (1x224x224x3), pipelined, 53 us per frame above its 0.96 ms kernel
  (3.3x REST). One at a time, the client's encoding and decoding, the WebSocket frames and the
  executor hop each take tens of microseconds.
- Benchmarks that loop an executable synchronously measured about 30 ms where the same runs
  with a turn of the event loop between them take 21 ms (V8 reclaims the runs' garbage only
  between tasks); the executor workers yield between executions, and bench:peers awaits each
  run.
`;

/** What earlier runs and profiles add to the run's verdicts on #31 (hand-written). */
export const ISSUE_31_ACROSS_RUNS =
  `Across runs (2026-11-27 and 28; this virtual machine's host moves single numbers by 10-30%
between runs, a peer's row too, and two-thread runs by up to 1.4x for tens of seconds; since
2026-11-28 the engines of a model are measured in turns, so such a spell falls on all of
them):

- In process: every run met 1.1x for MobileNetV2 (0.95-1.08x) and the PaddleOCR models
  (0.54-1.07x); Moonshine was over the line in three runs, at one thread or two
  (0.88-1.17x), and met it in the two runs after the connection guard stopped forwarding
  (0.93-0.97x at one thread, 1.04-1.05x at two).
- Over HTTP: runs missed 1.3x in 0-4 rows of ten; the PP-OCR classifier at one thread in
  every run measured in turns (1.38-1.48x; 1.01-1.40x before). Its run is 0.45 ms, so fixed
  costs decide: nnserve's executor round trip takes about 0.15 ms (measured inside the
  server: 76 µs to the executor, of which 31 µs in \`postMessage\`, and 75 µs back), where
  the onnxruntime-node server runs onnxruntime on its own thread (\`session.run\` is
  synchronous there, which a service that takes other requests meanwhile cannot do);
  nnserve's HTTP part is about 0.1 ms more than that server's. The connection guard's
  forwarding hop cost it about 0.1-0.2 ms more (two thread wake-ups a request); since the
  guard watches Deno.serve's own connections instead (later on 2026-11-28), every row met
  1.3x in each of the runs measured (the run above and one per model beside it: the
  classifier at one thread 1.12x and 1.20x, MobileNetV2 1.06x and 1.23x).
- Throughput at 16 connections: the PaddleOCR models met it in every run (1.03-2.04x);
  MobileNetV2 0.90-1.13x and Moonshine 0.97-1.15x while the guard forwarded; 1.06-1.17x
  and 1.29-1.35x in the runs since (the run above and one per model beside it). Two
  MobileNetV2 runs side by side (nnserve's two executors at one thread each) against the
  peer's one run on two threads: which is faster depends on the same spells. In a separate
  run, 345 requests/s through the connection guard and 364 without it (the guard then
  forwarded each request's 0.6 MB in its own thread), against the peer's 394.
- On the 16-core GPU machine, against Python's onnxruntime there (the section above, 2026-11-28):
  - MobileNetV2 in process: one execution 2.7-2.8 ms against 1.84 ms (1.5x); at 16
    concurrent clients, 1055 against 945 executions/s (1.12x). Since executions share the
    threads evenly (later that day): 2.3-2.5 ms against 1.8 at one client; at 2, 4, 8 and 16
    clients 667, 924, 1161 and 1319 executions/s, where one Python session served 576, 654,
    776 and 910 and a Python session per client 854, 1089, 1292 and 1327.
  - Over HTTP at 16 clients, across three runs: 575-674 requests/s against the Python
    server's 504-562 (1.10-1.34x) and the Node server's 252-292 (2.2-2.7x).
  - Over HTTP at one client: 0.65-0.67x the Python server.

`;
