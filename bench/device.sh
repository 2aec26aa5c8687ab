#!/usr/bin/env bash
# The measurements #31 and #33 ask for on the 16-core GPU machine (DEVELOPERS.md), in one run:
# MobileNetV2 in process against onnxruntime-node and Python's onnxruntime at 1 thread and every
# core, with concurrent clients (bench/onnxruntime_device.ts --python); then bench:load's rows at
# 1 and 16 clients, batching off and on, against the onnxruntime-node and Python servers. Pack
# with `bash ../shared/device/pack.sh bench/load.ts bench/onnxruntime_device.ts`, copy the
# PP-OCR classifier into .device/ (its npm package is not packed), and run there as
#   bash .device/enter.sh bash bench/device.sh "$OUT" .device/ch_ppocr_mobile_v2.0_cls_infer.onnx
# Each step's output also goes to a log in the first argument's folder.
set -uo pipefail
out=${1:?an output folder}
ocr=${2:?the PP-OCR classifier .onnx}
{ nproc; grep -m1 "model name" /proc/cpuinfo; python3 -c 'import onnxruntime; print("python onnxruntime", onnxruntime.__version__)'; } 2>&1 | tee "$out/machine.log"
timeout 150 deno run -A bench/onnxruntime_device.ts --python 2>&1 | tee "$out/in_process.log"
timeout 240 deno run -A bench/load.ts --clients 1,16 --peers node,python \
  --ocr-model "$ocr" 2>&1 | grep -v "^Warning: maxDynamic" | tee "$out/load.log"
