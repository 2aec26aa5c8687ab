/**
 * `GET /demo`: a browser page that streams camera frames through a burst. The page registers
 * a small image classifier (`demoModel`, served as `/demo/model.json`) through the REST API as
 * whoever opens it (`?key=` or `#key=` when API keys are configured), compiles it, opens a
 * burst on the compilation and shows the top class and frames per second live. The page and
 * its scripts are the files of `web/`, read once when the router is built; these routes serve
 * only those static assets, so they sit outside `/v1/*` and its authentication.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { notFound } from "../nnapi/errors.ts";
import { type ModelJson, ModelSchema } from "../driver/model/model_schema.ts";
import { newRouter } from "./router.ts";
import { errorResponses } from "./schemas.ts";

/** Side in pixels of the square RGB image the demo model takes ([1, side, side, 3]). */
export const DEMO_INPUT_SIZE = 64;

/** The demo model's classes, in output order. */
export const DEMO_CLASSES = ["red", "green", "blue", "bright", "dark", "busy", "plain"] as const;

/** The web/ files the page loads, by the name they are served under (`/demo/{asset}`). */
const WEB_ASSETS: Record<string, string> = {
  "demo.js": "text/javascript; charset=utf-8",
  "burst_protocol.js": "text/javascript; charset=utf-8",
  "demo.css": "text/css; charset=utf-8",
};

/** Same-origin everything; the camera stream is a MediaStream, never a URL. */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; connect-src 'self'; img-src 'self' data: blob:; object-src 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "cache-control": "no-cache",
};

const CONV_CHANNELS = 8;
const SOBEL_X = [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]];
const SOBEL_Y = [[-1, -2, -1], [0, 0, 0], [1, 2, 1]];
const LUMA = [0.299, 0.587, 0.114];

/** Filter taps of the 8 convolution channels: [out][y][x][in] (the NNAPI filter layout). */
function convFilter(): number[] {
  const taps: number[] = [];
  for (let out = 0; out < CONV_CHANNELS; out++) {
    for (let y = 0; y < 3; y++) {
      for (let x = 0; x < 3; x++) {
        for (let c = 0; c < 3; c++) {
          // 0-2: box average of R, G, B; 3/4 and 5/6: the positive and negative halves of
          // the horizontal and vertical Sobel gradient of luma (RELU keeps one half each);
          // 7: box average of luma.
          const tap = out < 3
            ? (c === out ? 1 / 9 : 0)
            : out < 5
            ? (out === 3 ? 1 : -1) * SOBEL_X[y][x] / 8 * LUMA[c]
            : out < 7
            ? (out === 5 ? 1 : -1) * SOBEL_Y[y][x] / 8 * LUMA[c]
            : LUMA[c] / 9;
          taps.push(tap);
        }
      }
    }
  }
  return taps;
}

/**
 * Class scores from the pooled features [R, G, B, gx+, gx-, gy+, gy-, luma], each a mean
 * over the image in 0..1: colour dominance, brightness, and edge density.
 */
function classifier(): { weights: number[]; bias: number[] } {
  const k = 12;
  const edges = (w: number) => [0, 0, 0, w, w, w, w, 0];
  const rows: [number[], number][] = [
    [[1, -0.5, -0.5, 0, 0, 0, 0, 0], 0], // red
    [[-0.5, 1, -0.5, 0, 0, 0, 0, 0], 0], // green
    [[-0.5, -0.5, 1, 0, 0, 0, 0, 0], 0], // blue
    [[0, 0, 0, 0, 0, 0, 0, 1], -0.65], // bright
    [[0, 0, 0, 0, 0, 0, 0, -1], 0.35], // dark
    [edges(10), -0.5], // busy
    [edges(-10), 0.3], // plain
  ];
  return {
    weights: rows.flatMap(([w]) => w.map((v) => k * v)),
    bias: rows.map(([, b]) => k * b),
  };
}

/**
 * The demo model: [1, 64, 64, 3] float32 RGB in 0..1 → CONV_2D 3x3 stride 2 (VALID) → RELU →
 * AVERAGE_POOL_2D over the whole 31x31 map → FULLY_CONNECTED to the classes → SOFTMAX. Its
 * weights are set by hand (colour, brightness and edge detectors), not trained, so what it
 * says about a camera frame is easy to check by eye.
 */
export function demoModel(): ModelJson {
  const side = DEMO_INPUT_SIZE;
  const mapSide = Math.floor((side - 3) / 2) + 1;
  const classes = DEMO_CLASSES.length;
  const { weights, bias } = classifier();
  const f32 = (dimensions: number[], lifetime: ModelJson["operands"][number]["lifetime"]) => ({
    type: "TENSOR_FLOAT32" as const,
    dimensions,
    scale: 0,
    zeroPoint: 0,
    lifetime,
  });
  const constant = (type: "INT32" | "FLOAT32", value: number) => ({
    type,
    dimensions: [],
    scale: 0,
    zeroPoint: 0,
    lifetime: "CONSTANT_COPY" as const,
    value: [value],
  });
  return {
    operands: [
      f32([1, side, side, 3], "MODEL_INPUT"), // 0 image
      { ...f32([CONV_CHANNELS, 3, 3, 3], "CONSTANT_COPY"), value: convFilter() }, // 1
      { ...f32([CONV_CHANNELS], "CONSTANT_COPY"), value: new Array(CONV_CHANNELS).fill(0) }, // 2
      constant("INT32", 2), // 3 padding: VALID
      constant("INT32", 2), // 4 stride 2
      constant("INT32", 0), // 5 activation: NONE
      f32([1, mapSide, mapSide, CONV_CHANNELS], "TEMPORARY_VARIABLE"), // 6 conv
      f32([1, mapSide, mapSide, CONV_CHANNELS], "TEMPORARY_VARIABLE"), // 7 relu
      constant("INT32", 1), // 8 stride 1
      constant("INT32", mapSide), // 9 pool window
      f32([1, 1, 1, CONV_CHANNELS], "TEMPORARY_VARIABLE"), // 10 features
      { ...f32([classes, CONV_CHANNELS], "CONSTANT_COPY"), value: weights }, // 11
      { ...f32([classes], "CONSTANT_COPY"), value: bias }, // 12
      f32([1, classes], "TEMPORARY_VARIABLE"), // 13 logits
      constant("FLOAT32", 1), // 14 softmax beta
      f32([1, classes], "MODEL_OUTPUT"), // 15 probabilities
    ],
    operations: [
      { type: "CONV_2D", inputs: [0, 1, 2, 3, 4, 4, 5], outputs: [6] },
      { type: "RELU", inputs: [6], outputs: [7] },
      { type: "AVERAGE_POOL_2D", inputs: [7, 3, 8, 8, 9, 9, 5], outputs: [10] },
      { type: "FULLY_CONNECTED", inputs: [10, 11, 12, 5], outputs: [13] },
      { type: "SOFTMAX", inputs: [13, 14], outputs: [15] },
    ],
    inputIndexes: [0],
    outputIndexes: [15],
    relaxComputationFloat32toFloat16: false,
  };
}

/** What `/demo/model.json` holds: what the page needs to know about the model, and the model. */
const DemoModelFile = z.object({
  inputSize: z.number().int().openapi({ description: "Side of the square RGB input image" }),
  classes: z.array(z.string()).openapi({ description: "The classes, in output order" }),
  model: ModelSchema,
});

/** `/demo/model.json`, served and documented as it is. */
const DEMO_MODEL_FILE = {
  inputSize: DEMO_INPUT_SIZE,
  classes: [...DEMO_CLASSES],
  model: demoModel(),
} satisfies z.input<typeof DemoModelFile>;

const demoPage = createRoute({
  method: "get",
  path: "/demo",
  summary: "Demo page: camera frames through a burst, results and frames per second live",
  responses: {
    200: {
      description: "The page",
      content: {
        "text/html": {
          schema: z.string().openapi({
            description: "The demo page (UTF-8 HTML); it loads /demo/demo.js and /demo/demo.css",
          }),
          example: '<!doctype html>\n<html lang="en">\n  <head>\n    <meta charset="utf-8">\n' +
            "    <title>nnserve burst demo</title>\n",
        },
      },
    },
  },
});

const demoAsset = createRoute({
  method: "get",
  path: "/demo/{asset}",
  summary: "The demo page's scripts, style sheet and model (model.json)",
  request: {
    params: z.object({
      asset: z.string().openapi({
        param: { name: "asset", in: "path", example: "model.json" },
        description: `One of ${[...Object.keys(WEB_ASSETS), "model.json"].join(", ")}`,
      }),
    }),
  },
  responses: {
    200: {
      description: "The asset",
      content: {
        "text/javascript": {
          schema: z.string().openapi({
            description: "The page's scripts (UTF-8 JavaScript modules): demo.js, " +
              "burst_protocol.js",
          }),
        },
        "text/css": {
          schema: z.string().openapi({ description: "The page's style sheet (UTF-8): demo.css" }),
        },
        "application/json": { schema: DemoModelFile, example: DEMO_MODEL_FILE },
      },
    },
    ...errorResponses(404),
  },
});

/** The demo page's routes; reads `web/` now, so a missing file fails at start-up. */
export function demoRoutes() {
  const web = new URL("../web/", import.meta.url);
  const page = Deno.readTextFileSync(new URL("index.html", web));
  const assets = new Map(
    Object.entries(WEB_ASSETS).map((
      [name, type],
    ) => [name, { body: Deno.readTextFileSync(new URL(name, web)), type }]),
  );
  assets.set("model.json", { body: JSON.stringify(DEMO_MODEL_FILE), type: "application/json" });
  return newRouter()
    .openapi(
      demoPage,
      (c) => c.body(page, 200, { ...SECURITY_HEADERS, "content-type": "text/html; charset=utf-8" }),
    )
    .openapi(demoAsset, (c) => {
      const asset = assets.get(c.req.valid("param").asset);
      if (!asset) throw notFound(`no demo asset ${c.req.valid("param").asset}`);
      return c.body(asset.body, 200, { ...SECURITY_HEADERS, "content-type": asset.type });
    });
}
