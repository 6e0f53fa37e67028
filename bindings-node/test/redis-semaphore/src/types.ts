// The options' type (compile-time only: run.mjs compiles without type checks).
export type TimeoutOptions = Record<string, unknown>
