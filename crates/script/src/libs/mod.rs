//! The libraries Redis makes visible to scripts beside Lua's own:
//! `cjson`, `cmsgpack`, `bit` and `struct`, each written in Rust against
//! the binding with the behaviour of the C library Redis bundles.

use mlua::Lua;

mod bit;
mod cjson;
mod cmsgpack;
mod struct_;

/// Sets the global tables `cjson`, `cmsgpack`, `bit` and `struct`.
pub fn load(lua: &Lua) -> mlua::Result<()> {
    bit::load(lua)?;
    cjson::load(lua)?;
    cmsgpack::load(lua)?;
    struct_::load(lua)
}
