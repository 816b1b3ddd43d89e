#[derive(clientgo_derive::CrdSchema, serde::Serialize)]
struct Spec {
    #[serde(serialize_with = "as_text")]
    size: u32,
}

fn as_text<S: serde::Serializer>(v: &u32, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&v.to_string())
}

fn main() {}
