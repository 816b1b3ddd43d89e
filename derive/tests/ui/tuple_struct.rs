#[derive(clientgo_derive::CrdSchema, serde::Serialize)]
struct Pair(i32, String);

fn main() {}
