#[derive(clientgo_derive::CrdSchema, serde::Serialize)]
#[serde(tag = "t", content = "c")]
enum Source {
    Url(String),
    Path(String),
}

fn main() {}
