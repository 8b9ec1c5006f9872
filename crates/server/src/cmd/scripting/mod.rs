//! Scripting commands, as Redis's `eval.c`, `functions.c` and
//! `script.c`: EVAL and its forms, SCRIPT, FUNCTION and FCALL. Scripts run on the engines through `Ctx::script_job`.

pub mod eval;
pub mod fcall;
pub mod function;
pub mod script;
