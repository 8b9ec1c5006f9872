//! Geospatial commands over sorted sets whose scores are geohashes:
//! Redis's `geo.c` (the geohash arithmetic is `keel_store::geohash`).

pub mod geoadd;
pub mod geopos;
pub mod search;
