/**
 * ModelStreamInfer: the protocol's bidirectional stream, the gRPC peer of a burst.
 */
import type * as grpc from "@grpc/grpc-js";
import { DriverError } from "../../nnapi/errors.ts";
import { bearerKey } from "../auth.ts";
import { type RequestPolling, StreamPolling } from "../../driver/burst/polling_window.ts";

/** Requests one ModelStreamInfer stream may have in flight (as a burst's window). */
export const STREAM_WINDOW = 32;

/**
 * ModelStreamInfer, the stream the protocol pipelines requests on (the peer of a burst):
 * each request starts as it arrives, up to {@link STREAM_WINDOW} in flight (one past it is
 * answered at once with an error naming the window, and holds nothing); answers go out in
 * the order their requests came, each carrying its request's id, an error as
 * `error_message`. The stream's key is checked once, from its metadata. When the client
 * goes (cancelled, or its connection lost) nothing more is written, and what runs finishes
 * into nothing. As a burst, a stream whose requests come back quickly has the service poll
 * for the next one after each answer (NNSERVE_BURST_POLLING_WINDOW).
 */
export function streamInfer(
  call: grpc.ServerDuplexStream<Record<string, unknown>, unknown>,
  service: {
    infer: (client: string, request: Record<string, unknown>) => Promise<unknown>;
    identify: (key: string | undefined) => string;
    polling: RequestPolling;
  },
): void {
  const { infer } = service;
  const key = bearerKey(call.metadata.get("authorization")[0]?.toString());
  // Settled once: every message of the stream waits on it, refused alike without a key.
  const client = new Promise<string>((resolve) => resolve(service.identify(key)));
  const polling = new StreamPolling(service.polling);
  /** Answers in request order; each settles to the message to write. */
  const pending: Promise<unknown>[] = [];
  let inFlight = 0;
  let ended = false;
  let gone = false;
  let writing = Promise.resolve();
  const failure = (request: Record<string, unknown>, error: unknown) => ({
    error_message: error instanceof DriverError
      ? `${error.status}: ${error.message}`
      : String((error as Error).message ?? error),
    infer_response: {
      model_name: String(request.model_name ?? ""),
      model_version: String(request.model_version ?? ""),
      id: String(request.id ?? ""),
    },
  });
  const flush = () => {
    writing = writing.then(async () => {
      while (pending.length > 0 && !gone) {
        const message = await pending.shift()!;
        inFlight--;
        if (gone) break;
        call.write(message);
        polling.answered();
      }
      if (ended && pending.length === 0 && !gone) call.end();
    });
  };
  call.on("data", (request: Record<string, unknown>) => {
    if (gone) return;
    polling.received();
    if (inFlight >= STREAM_WINDOW) {
      // A refusal holds no place: it overtakes the answers still running.
      call.write(failure(
        request,
        new DriverError(
          "RESOURCE_EXHAUSTED_TRANSIENT",
          `more than ${STREAM_WINDOW} requests in flight on this stream`,
        ),
      ));
      return;
    }
    inFlight++;
    pending.push(
      client.then((owner) => infer(owner, request))
        .then((response) => ({ infer_response: response }), (error) => failure(request, error)),
    );
    flush();
  });
  call.on("end", () => {
    ended = true;
    flush();
  });
  const leave = () => {
    gone = true;
  };
  call.on("cancelled", leave);
  call.on("error", leave);
}
