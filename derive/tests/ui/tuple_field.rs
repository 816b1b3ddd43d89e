#[derive(clientgo_derive::CrdSchema, serde::Serialize)]
struct Spec {
    pair: (i32, String),
}

fn main() {}
