//! The protobuf wire format, read: varints, field tags and length-delimited values, with
//! every length checked against what is left of the buffer.
//!
//! Kubernetes writes its protobuf with gogo-protobuf (proto2 syntax): no groups, no fixed32 or
//! fixed64 fields in the types this codec knows, so those wire types are read (to be skipped
//! or refused by the schema) but never decoded into values.

use super::ProtobufError;

/// One field's value as it lies on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2: a string, bytes, an embedded message or a packed repeated field.
    Bytes(&'a [u8]),
    /// Wire type 5.
    Fixed32(u32),
}

/// What can be wrong with the wire bytes themselves: a small value, so that reading a field
/// returns in registers or a few stores (a [`ProtobufError`] is several words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireError {
    Truncated,
    Varint,
    FieldNumber,
    WireType(u8),
}

impl From<WireError> for ProtobufError {
    fn from(error: WireError) -> Self {
        match error {
            WireError::Truncated => ProtobufError::Truncated,
            WireError::Varint => ProtobufError::Varint,
            WireError::FieldNumber => ProtobufError::FieldNumber,
            WireError::WireType(wire) => ProtobufError::WireType { wire },
        }
    }
}

/// Reads the fields of one message, in order.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// How many bytes have been read.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    #[inline]
    fn varint(&mut self) -> Result<u64, WireError> {
        // Most tags and lengths fit in one byte.
        if let Some(&byte) = self.buf.get(self.pos) {
            if byte < 0x80 {
                self.pos += 1;
                return Ok(u64::from(byte));
            }
        }
        let (value, end) = varint_at(self.buf, self.pos)
            .map_err(|_| WireError::Varint)?
            .ok_or(WireError::Truncated)?;
        self.pos = end;
        Ok(value)
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.buf.len())
            .ok_or(WireError::Truncated)?;
        let bytes = &self.buf[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    /// The next field's number and value; `None` at the end of the message.
    #[inline(always)]
    pub(crate) fn field(&mut self) -> Result<Option<(u32, Value<'a>)>, WireError> {
        if self.pos == self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = u32::try_from(key >> 3).map_err(|_| WireError::Varint)?;
        if number == 0 {
            return Err(WireError::FieldNumber);
        }
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => Value::Fixed64(u64::from_le_bytes(
                self.take(8)?.try_into().expect("eight bytes"),
            )),
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| WireError::Truncated)?;
                Value::Bytes(self.take(len)?)
            }
            5 => Value::Fixed32(u32::from_le_bytes(
                self.take(4)?.try_into().expect("four bytes"),
            )),
            wire => return Err(WireError::WireType(wire as u8)),
        };
        Ok(Some((number, value)))
    }
}

/// The varint at `pos` of `buf` and the position after it; `None` if `buf` ends inside it.
#[inline]
pub(crate) fn varint_at(buf: &[u8], pos: usize) -> Result<Option<(u64, usize)>, ProtobufError> {
    let mut value = 0u64;
    for (i, shift) in (0..64).step_by(7).enumerate() {
        let Some(&byte) = buf.get(pos + i) else {
            return Ok(None);
        };
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            // The tenth byte may carry one bit only.
            if shift == 63 && byte > 1 {
                return Err(ProtobufError::Varint);
            }
            return Ok(Some((value, pos + i + 1)));
        }
    }
    Err(ProtobufError::Varint)
}

/// The last value of each length-delimited field `numbers` of a message (empty where the field
/// is absent); other fields are skipped. `message` names it in errors.
pub(crate) fn bytes_fields<'a, const N: usize>(
    bytes: &'a [u8],
    message: &'static str,
    numbers: [u32; N],
) -> Result<[&'a [u8]; N], ProtobufError> {
    let mut found: [&[u8]; N] = [&[]; N];
    let mut reader = Reader::new(bytes);
    while let Some((number, value)) = reader.field()? {
        let Some(i) = numbers.iter().position(|&n| n == number) else {
            continue;
        };
        let Value::Bytes(value) = value else {
            return Err(ProtobufError::FieldType {
                message,
                field: number,
            });
        };
        found[i] = value;
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(buf: &[u8]) -> Result<Vec<(u32, Value<'_>)>, ProtobufError> {
        let mut reader = Reader::new(buf);
        let mut out = Vec::new();
        while let Some(field) = reader.field()? {
            out.push(field);
        }
        Ok(out)
    }

    #[test]
    fn reads_each_wire_type() {
        let buf = [
            0x08, 0x96, 0x01, // 1: varint 150
            0x12, 0x02, b'h', b'i', // 2: "hi"
            0x19, 1, 0, 0, 0, 0, 0, 0, 0, // 3: fixed64 1
            0x25, 2, 0, 0, 0, // 4: fixed32 2
        ];
        assert_eq!(
            fields(&buf).unwrap(),
            vec![
                (1, Value::Varint(150)),
                (2, Value::Bytes(b"hi")),
                (3, Value::Fixed64(1)),
                (4, Value::Fixed32(2)),
            ]
        );
    }

    #[test]
    fn a_ten_byte_varint_holds_a_negative_int64() {
        let mut buf = vec![0x08];
        buf.extend([0xff; 9]);
        buf.push(0x01);
        assert_eq!(fields(&buf).unwrap(), vec![(1, Value::Varint(u64::MAX))]);
        assert_eq!(u64::MAX as i64, -1);
    }

    #[test]
    fn refuses_what_does_not_fit_or_is_not_protobuf() {
        // A length past the end of the buffer.
        assert_eq!(fields(&[0x12, 0x05, b'a']), Err(ProtobufError::Truncated));
        // A varint cut short, and one too long.
        assert_eq!(fields(&[0x08, 0x80]), Err(ProtobufError::Truncated));
        let mut long = vec![0x08];
        long.extend([0xff; 10]);
        long.push(0x01);
        assert_eq!(fields(&long), Err(ProtobufError::Varint));
        // A length that overflows.
        let mut huge = vec![0x12];
        huge.extend([0xff; 9]);
        huge.push(0x01);
        assert_eq!(fields(&huge), Err(ProtobufError::Truncated));
        // Groups, and field number 0.
        assert_eq!(fields(&[0x0b]), Err(ProtobufError::WireType { wire: 3 }));
        assert_eq!(fields(&[0x00, 0x01]), Err(ProtobufError::FieldNumber));
    }
}
