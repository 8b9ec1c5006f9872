//! Connection commands: Redis's `networking.c`, `acl.c` (AUTH) and `server.c` (PING, ECHO, HELLO, SELECT, RESET).

pub mod auth;
pub mod client;
pub mod echo;
pub mod hello;
pub mod ping;
pub mod quit;
pub mod reset;
pub mod select;
