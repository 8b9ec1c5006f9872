//! Pub/sub commands: Redis's `pubsub.c`.

pub mod publish;
pub mod subscribe;
