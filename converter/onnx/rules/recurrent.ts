/**
 * The recurrent ONNX operators: LSTM and RNN onto NNAPI's sequence operations, GRU unrolled
 * (see lstm.ts, rnn.ts, gru.ts; what they share is in recurrent_common.ts).
 */
import type { Rule } from "../rule.ts";
import { GRU_RULES } from "./gru.ts";
import { LSTM_RULES } from "./lstm.ts";
import { RNN_RULES } from "./rnn.ts";

export const RECURRENT_RULES: Record<string, Rule> = { ...LSTM_RULES, ...RNN_RULES, ...GRU_RULES };
