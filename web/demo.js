/**
 * The demo page: registers the demo model through the REST API, compiles it, opens a burst on
 * the compilation and sends each new camera frame, scaled down to the model's input, as an
 * EXECUTE frame while fewer than `window` requests are in flight (the rest of the camera's
 * frames are skipped, so a slow server never builds a queue). Each RESULT frame updates the
 * top class, the probabilities, the frame count and the frames per second.
 *
 * A user's ONNX classifier (the file picker) replaces the demo model: the page imports it
 * (`POST /v1/models` as application/onnx, its input fixed to 1x3xHxW), sends frames as NCHW
 * RGB in 0..1, and shows the top output index (a softmax is applied when the outputs are not
 * already a distribution).
 *
 * Query: `?key=` (or `#key=`, which stays out of server logs) when the service has API keys;
 * `?window=N` for the pipelining window (default 4, at most the burst's maxInFlight).
 */
import { decodeResult, encodeRequest } from "./burst_protocol.js";

const query = new URLSearchParams(location.search);
const fragment = new URLSearchParams(location.hash.slice(1));
const apiKey = fragment.get("key") ?? query.get("key") ?? "";
const requestedWindow = Math.max(1, Math.floor(Number(query.get("window") ?? 4)) || 4);

/**
 * @param {string} id
 * @returns {HTMLElement}
 */
function element(id) {
  const found = document.getElementById(id);
  if (!found) throw new Error(`the page has no #${id}`);
  return found;
}

const video = /** @type {HTMLVideoElement} */ (element("camera"));
const canvas = /** @type {HTMLCanvasElement} */ (element("input"));
const toggle = /** @type {HTMLButtonElement} */ (element("toggle"));
const picker = /** @type {HTMLInputElement} */ (element("onnx"));

/** A user's ONNX classifier, when one was picked. @type {{ name: string, bytes: Uint8Array } | undefined} */
let userModel;

/**
 * One run of the demo: what it created on the server and what it holds in the browser.
 * @typedef {{
 *   stopped: boolean, starting: boolean, model?: string, compilation?: string, stream?: MediaStream,
 *   socket?: WebSocket, window: number, inFlight: number, nextId: number,
 *   sent: Map<number, number>, frames: number, errors: number, skipped: number,
 *   resultTimes: number[], roundTrips: number[], classes: string[], inputSize: number,
 *   inputHeight: number, layout: "NHWC" | "NCHW"
 * }} Session
 */

/** @type {Session | undefined} */
let current;

/**
 * @param {"starting" | "running" | "stopped" | "error"} state
 * @param {string} text
 */
function setStatus(state, text) {
  document.body.dataset.state = state;
  element("status").textContent = text;
}

/**
 * A REST call with the page's API key; throws the service's error message on failure.
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @param {boolean} [keepalive] let the request outlive the page (on pagehide)
 * @returns {Promise<Record<string, unknown>>}
 */
async function api(method, path, body, keepalive = false) {
  /** @type {Record<string, string>} */
  const headers = {};
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    keepalive,
  });
  const text = await response.text();
  const json = text ? JSON.parse(text) : {};
  if (!response.ok) {
    throw new Error(
      `${method} ${path}: ${response.status} ${json.status ?? ""} ${json.message ?? ""}`,
    );
  }
  return json;
}

/** @param {string[]} classes */
function buildTable(classes) {
  const table = element("probs");
  table.replaceChildren(...classes.map((name) => {
    const row = document.createElement("tr");
    const label = document.createElement("td");
    label.textContent = name;
    const bar = document.createElement("td");
    const meter = document.createElement("meter");
    meter.min = 0;
    meter.max = 1;
    meter.value = 0;
    bar.append(meter);
    const value = document.createElement("td");
    value.textContent = "—";
    row.append(label, bar, value);
    return row;
  }));
}

/**
 * @param {Session} session
 * @param {number[]} probabilities
 */
function showResult(session, probabilities) {
  let top = 0;
  probabilities.forEach((p, i) => {
    if (p > probabilities[top]) top = i;
  });
  const result = element("result");
  result.textContent = `${session.classes[top]} ${(100 * probabilities[top]).toFixed(1)}%`;
  result.dataset.probabilities = JSON.stringify(probabilities);
  const rows = element("probs").querySelectorAll("tr");
  probabilities.forEach((p, i) => {
    const cells = rows[i]?.children;
    if (!cells) return;
    /** @type {HTMLMeterElement} */ (cells[1].firstElementChild).value = p;
    cells[2].textContent = `${(100 * p).toFixed(1)}%`;
  });
}

/** @param {Session} session */
function showCounters(session) {
  const times = session.resultTimes;
  element("frames").textContent = String(session.frames);
  if (times.length >= 2) {
    const fps = (times.length - 1) * 1000 / (times[times.length - 1] - times[0]);
    element("fps").textContent = fps.toFixed(1);
  }
  if (session.roundTrips.length > 0) {
    const mean = session.roundTrips.reduce((a, b) => a + b, 0) / session.roundTrips.length;
    element("latency").textContent = mean.toFixed(1);
  }
  element("window").textContent = `${session.inFlight} / ${session.window}`;
  element("skipped").textContent = String(session.skipped);
  element("errors").textContent = String(session.errors);
}

/**
 * Grabs the current camera frame into the model's input and sends it; false when the camera
 * has no picture yet.
 * @param {Session} session
 * @param {WebSocket} socket
 * @param {CanvasRenderingContext2D} context
 * @returns {boolean}
 */
function sendFrame(session, socket, context) {
  const { videoWidth: width, videoHeight: height } = video;
  if (width === 0 || height === 0) return false;
  const side = session.inputSize;
  const rows = session.inputHeight;
  const crop = Math.min(width, height);
  context.drawImage(video, (width - crop) / 2, (height - crop) / 2, crop, crop, 0, 0, side, rows);
  const rgba = context.getImageData(0, 0, side, rows).data;
  // float32 RGB in 0..1, little-endian whatever the platform: [1, rows, side, 3] (NHWC) or
  // [1, 3, rows, side] (NCHW, the planes one after the other).
  const pixels = side * rows;
  const bytes = new Uint8Array(pixels * 3 * 4);
  const view = new DataView(bytes.buffer);
  const nchw = session.layout === "NCHW";
  for (let p = 0; p < pixels; p++) {
    for (let c = 0; c < 3; c++) {
      const at = nchw ? (c * pixels + p) * 4 : (p * 3 + c) * 4;
      view.setFloat32(at, rgba[4 * p + c] / 255, true);
    }
  }
  const id = session.nextId;
  session.nextId = (session.nextId + 1) >>> 0;
  socket.send(encodeRequest({
    id,
    measureTiming: false,
    deadlineUs: 0,
    inputs: [{ kind: "inline", bytes }],
    outputs: [],
  }));
  session.sent.set(id, performance.now());
  session.inFlight++;
  return true;
}

/**
 * Sends camera frames as they come while the window has room.
 * @param {Session} session
 * @param {WebSocket} socket
 */
function streamFrames(session, socket) {
  canvas.width = session.inputSize;
  canvas.height = session.inputHeight;
  const context = canvas.getContext("2d", { willReadFrequently: true });
  if (!context) throw new Error("no 2-D canvas context");
  const next = () => {
    if (session.stopped) return;
    if ("requestVideoFrameCallback" in video) video.requestVideoFrameCallback(onFrame);
    else requestAnimationFrame(onFrame);
  };
  const onFrame = () => {
    if (session.stopped || socket.readyState !== WebSocket.OPEN) return;
    if (session.inFlight < session.window) sendFrame(session, socket, context);
    else session.skipped++;
    next();
  };
  next();
}

/**
 * @param {Session} session
 * @param {Uint8Array} bytes
 */
function receiveResult(session, bytes) {
  const result = decodeResult(bytes);
  const now = performance.now();
  const sentAt = session.sent.get(result.id);
  session.sent.delete(result.id);
  session.inFlight = Math.max(0, session.inFlight - 1);
  if (sentAt !== undefined) {
    session.roundTrips.push(now - sentAt);
    if (session.roundTrips.length > 30) session.roundTrips.shift();
  }
  if (result.status !== "NONE" || result.outputs.length === 0) {
    session.errors++;
    element("status").textContent = `frame ${result.id}: ${result.status} ${result.message}`;
  } else {
    const out = result.outputs[0].bytes;
    const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
    const probabilities = asDistribution(Array.from(
      { length: out.byteLength / 4 },
      (_, i) => view.getFloat32(4 * i, true),
    ));
    if (session.classes.length !== probabilities.length) {
      // A user's model: its classes are its output indexes.
      session.classes = probabilities.map((_, i) => `class ${i}`);
      buildTable(probabilities.length <= 20 ? session.classes : []);
    }
    session.frames++;
    session.resultTimes.push(now);
    while (session.resultTimes.length > 2 && now - session.resultTimes[0] > 2000) {
      session.resultTimes.shift();
    }
    showResult(session, probabilities);
  }
  showCounters(session);
}

/**
 * Opens the burst; resolves once the service said "ready" and frames are streaming.
 * @param {Session} session
 * @returns {Promise<void>}
 */
function openBurst(session) {
  const url = new URL(
    `/v1/compilations/${encodeURIComponent(session.compilation ?? "")}/burst`,
    location.href,
  );
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  if (apiKey) url.searchParams.set("access_token", apiKey);
  const socket = new WebSocket(url);
  socket.binaryType = "arraybuffer";
  session.socket = socket;
  return new Promise((resolve, reject) => {
    socket.onmessage = (event) => {
      if (typeof event.data !== "string") {
        receiveResult(session, new Uint8Array(event.data));
        return;
      }
      const message = JSON.parse(event.data);
      if (message.type === "ready") {
        session.window = Math.max(1, Math.min(requestedWindow, message.maxInFlight));
        setStatus("running", `running: burst on compilation ${session.compilation}`);
        streamFrames(session, socket);
        resolve();
      } else if (message.type === "error") {
        session.errors++;
        element("status").textContent = `burst: ${message.status} ${message.message}`;
        showCounters(session);
      }
    };
    socket.onclose = (event) => {
      const why = `the burst closed (${event.code}${event.reason ? `: ${event.reason}` : ""})`;
      reject(new Error(why));
      if (!session.stopped) fail(session, new Error(why));
    };
  });
}

/**
 * Releases what a run holds: closes the burst, stops the camera and deletes what the run
 * created on the server. Each thing is released once, so a run stopped while it was still
 * starting calls this again for what it created after the stop. While the run is still
 * creating things, its model and compilation are deleted only once that request is answered
 * (`start` releases again then): deleting the model under its own compilation request would
 * make that request fail with 404.
 * @param {Session} session
 * @param {boolean} [leaving] the page is going away (requests must outlive it)
 */
function release(session, leaving = false) {
  session.socket?.close(1000, "stopped");
  session.socket = undefined;
  session.stream?.getTracks().forEach((track) => track.stop());
  session.stream = undefined;
  if (current === session) video.srcObject = null;
  if (session.starting && !leaving) return;
  const created = [
    session.compilation && `/v1/compilations/${encodeURIComponent(session.compilation)}`,
    session.model && `/v1/models/${encodeURIComponent(session.model)}`,
  ];
  for (const path of created) {
    if (path) api("DELETE", path, undefined, leaving).catch(() => {});
  }
  session.compilation = undefined;
  session.model = undefined;
}

/**
 * Ends a run.
 * @param {Session} session
 * @param {boolean} [leaving] the page is going away
 */
function stop(session, leaving = false) {
  if (session.stopped) return;
  session.stopped = true;
  release(session, leaving);
  toggle.textContent = "Start";
  toggle.disabled = false;
}

/**
 * @param {Session} session
 * @param {unknown} error
 */
function fail(session, error) {
  stop(session);
  const message = error instanceof Error ? error.message : String(error);
  setStatus("error", `error: ${message}`);
  console.error(error);
}

async function start() {
  /** @type {Session} */
  const session = {
    stopped: false,
    starting: true,
    window: 1,
    inFlight: 0,
    nextId: 1,
    sent: new Map(),
    frames: 0,
    errors: 0,
    skipped: 0,
    resultTimes: [],
    roundTrips: [],
    classes: [],
    inputSize: 0,
    inputHeight: 0,
    layout: "NHWC",
  };
  current = session;
  toggle.textContent = "Stop";
  toggle.disabled = false;
  element("result").textContent = "—";
  showCounters(session);
  try {
    setStatus("starting", "registering the model…");
    if (userModel) {
      await importUserModel(session, userModel);
    } else {
      const response = await fetch("/demo/model.json");
      const demo = await response.json();
      session.classes = demo.classes;
      session.inputSize = demo.inputSize;
      session.inputHeight = demo.inputSize;
      buildTable(session.classes);
      session.model = String((await api("POST", "/v1/models", demo.model)).id);
    }
    if (session.stopped) return release(session);
    setStatus("starting", "compiling…");
    const compilation = await api("POST", "/v1/compilations", {
      model: session.model,
      preference: "SUSTAINED_SPEED",
    });
    session.compilation = String(compilation.id);
    if (session.stopped) return release(session);
    setStatus("starting", "opening the camera…");
    if (!navigator.mediaDevices?.getUserMedia) {
      throw new Error("this page needs camera access: open it over https or on localhost");
    }
    session.stream = await navigator.mediaDevices.getUserMedia({
      video: { width: { ideal: 640 }, height: { ideal: 480 } },
      audio: false,
    });
    if (session.stopped) return release(session);
    video.srcObject = session.stream;
    await video.play();
    setStatus("starting", "opening the burst…");
    await openBurst(session);
  } catch (error) {
    if (!session.stopped) fail(session, error);
  } finally {
    session.starting = false;
    if (session.stopped) release(session);
  }
}

/**
 * Outputs as probabilities: as they are when they already form a distribution, else softmax.
 * @param {number[]} values
 * @returns {number[]}
 */
function asDistribution(values) {
  const sum = values.reduce((a, b) => a + b, 0);
  if (values.every((v) => v >= 0 && v <= 1) && Math.abs(sum - 1) < 1e-3) return values;
  const max = Math.max(...values);
  const exps = values.map((v) => Math.exp(v - max));
  const total = exps.reduce((a, b) => a + b, 0);
  return exps.map((e) => e / total);
}

/**
 * Sends an ONNX file to `POST /v1/models`; `shape` fixes its input.
 * @param {Uint8Array} bytes
 * @param {string} name
 * @param {string} [shape]
 * @returns {Promise<Record<string, any>>}
 */
async function uploadOnnx(bytes, name, shape) {
  const query = new URLSearchParams({ name });
  if (shape) query.set("shape", shape);
  /** @type {Record<string, string>} */
  const headers = { "content-type": "application/onnx" };
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  const response = await fetch(`/v1/models?${query}`, { method: "POST", headers, body: bytes });
  const json = await response.json();
  if (!response.ok) throw new Error(`importing ${name}: ${json.status} ${json.message}`);
  return json;
}

/**
 * Imports the user's classifier with its input fixed to 1x3xHxW (H and W from the file, 224
 * where they are symbolic).
 * @param {Session} session
 * @param {{ name: string, bytes: Uint8Array }} file
 */
async function importUserModel(session, file) {
  let info = await uploadOnnx(file.bytes, file.name);
  const [input] = info.onnx.inputs;
  const shape = input.shape;
  if (
    info.onnx.inputs.length !== 1 || shape.length !== 4 ||
    (typeof shape[1] === "number" && shape[1] !== 3)
  ) {
    await api("DELETE", `/v1/models/${encodeURIComponent(info.id)}`);
    throw new Error(`${file.name}: the demo takes one NCHW RGB image input, not [${shape}]`);
  }
  const extent = (/** @type {number | string} */ d) => typeof d === "number" ? d : 224;
  const [height, width] = [extent(shape[2]), extent(shape[3])];
  if (shape.some((/** @type {number | string} */ d) => typeof d !== "number")) {
    await api("DELETE", `/v1/models/${encodeURIComponent(info.id)}`);
    info = await uploadOnnx(file.bytes, file.name, `${input.name}:1x3x${height}x${width}`);
  }
  session.model = String(info.id);
  session.layout = "NCHW";
  session.inputSize = width;
  session.inputHeight = height;
  session.classes = [];
  buildTable([]);
}

picker.addEventListener("change", async () => {
  const file = picker.files?.[0];
  if (!file) return;
  userModel = { name: file.name, bytes: new Uint8Array(await file.arrayBuffer()) };
  if (current && !current.stopped) stop(current);
  start();
});

toggle.addEventListener("click", () => {
  if (current && !current.stopped) {
    stop(current);
    setStatus("stopped", "stopped");
  } else {
    start();
  }
});
addEventListener("pagehide", () => {
  if (current) stop(current, true);
});

start();
