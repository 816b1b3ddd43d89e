#[derive(clientgo_derive::CrdSchema, serde::Serialize)]
#[serde(untagged)]
enum Size {
    Auto,
    Fixed(u32),
}

fn main() {}
