//! Scripting commands, as Redis's `eval.c`, `functions.c` and
//! `script.c`: EVAL and its forms, SCRIPT, and (in `function`) FUNCTION
//! and FCALL. Scripts run on the engines through `Ctx::script_job`.

pub mod eval;
pub mod script;
