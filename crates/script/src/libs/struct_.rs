use mlua::Lua;

pub fn load(_lua: &Lua) -> mlua::Result<()> {
    Ok(())
}
