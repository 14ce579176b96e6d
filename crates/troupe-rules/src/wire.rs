//! Reading the compiled IR's shared strings (Format 14.4, `ir.json`). A base
//! module like `diag`: every stage may use it, it uses none.
//!
//! serde reads an `Arc<str>` through a `String` and a `Box<str>` and then
//! copies it into the `Arc`: two allocations and a copy per string. An IR
//! holds thousands of them (IDs, replies, keys), so these functions, used
//! with `#[serde(deserialize_with = …)]`, build each `Arc<str>` from the
//! text the deserializer hands over, in one allocation. What they accept is
//! what serde's own implementation accepts (a JSON string).
//!
//! ```
//! # use std::sync::Arc;
//! #[derive(serde::Deserialize)]
//! struct Rule {
//!     #[serde(deserialize_with = "troupe::wire::shared_str")]
//!     id: Arc<str>,
//!     #[serde(deserialize_with = "troupe::wire::shared_strs")]
//!     replies: Vec<Arc<str>>,
//! }
//! let r: Rule = serde_json::from_str(r#"{"id": "r\u0031", "replies": ["a", "b"]}"#).unwrap();
//! assert_eq!(&*r.id, "r1");
//! assert_eq!(r.replies, vec![Arc::from("a"), Arc::from("b")]);
//! ```

use std::fmt;
use std::sync::Arc;

use serde::de::{Deserializer, SeqAccess, Visitor};

struct SharedStr;

impl Visitor<'_> for SharedStr {
    type Value = Arc<str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Arc<str>, E> {
        Ok(Arc::from(v))
    }
}

/// One `Arc<str>`.
pub fn shared_str<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<str>, D::Error> {
    d.deserialize_str(SharedStr)
}

/// An `Option<Arc<str>>` (`null` is `None`).
pub fn shared_str_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Arc<str>>, D::Error> {
    struct Opt;
    impl<'de> Visitor<'de> for Opt {
        type Value = Option<Arc<str>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string or null")
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            shared_str(d).map(Some)
        }
    }
    d.deserialize_option(Opt)
}

/// A `Vec<Arc<str>>`, built at the size the deserializer announces (never
/// more than 4,096 ahead of the elements read, so a false hint costs
/// little).
pub fn shared_strs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Arc<str>>, D::Error> {
    struct Seq;
    impl<'de> Visitor<'de> for Seq {
        type Value = Vec<Arc<str>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list of strings")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
            while let Some(s) = seq.next_element_seed(Element)? {
                out.push(s);
            }
            Ok(out)
        }
    }
    struct Element;
    impl<'de> serde::de::DeserializeSeed<'de> for Element {
        type Value = Arc<str>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Arc<str>, D::Error> {
            shared_str(d)
        }
    }
    d.deserialize_seq(Seq)
}
