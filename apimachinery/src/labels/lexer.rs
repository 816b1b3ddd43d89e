//! Tokenizer for the label selector string syntax.
//!
//! Ports the `Lexer` of `k8s.io/apimachinery/pkg/labels/selector.go`: whitespace (space,
//! tab, CR, LF) separates tokens; `= ! ( ) , > <` are special characters, combined greedily
//! into `!=` and `==`; any other run of bytes is an identifier, except the keywords `in`
//! and `notin`. Works on bytes like Go; since every delimiter is ASCII, identifiers are
//! always valid UTF-8 slices of the input. Each token records its byte offset, so parse
//! errors can say where they are.

/// A token kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Token {
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

/// A token with its text and byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Item<'a> {
    pub(crate) token: Token,
    pub(crate) literal: &'a str,
    pub(crate) position: usize,
}

pub(crate) struct Lexer<'a> {
    input: &'a str,
    pos: usize,
}

fn is_whitespace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(c: u8) -> bool {
    matches!(c, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn special_token(s: &[u8]) -> Option<Token> {
    Some(match s {
        b"!=" => Token::NotEquals,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b"!" => Token::DoesNotExist,
        b"(" => Token::OpenPar,
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b">" => Token::GreaterThan,
        b"<" => Token::LessThan,
        _ => return None,
    })
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(input: &'a str) -> Lexer<'a> {
        Lexer { input, pos: 0 }
    }

    /// The next token; [`Token::EndOfString`] forever once the input is exhausted.
    pub(crate) fn lex(&mut self) -> Item<'a> {
        let bytes = self.input.as_bytes();
        while self.pos < bytes.len() && is_whitespace(bytes[self.pos]) {
            self.pos += 1;
        }
        let start = self.pos;
        let Some(&first) = bytes.get(start) else {
            return Item {
                token: Token::EndOfString,
                literal: "",
                position: start,
            };
        };
        let token = if is_special(first) {
            // Longest match: a two-character operator if there is one, else the single
            // character (every special character is a token on its own).
            let two = bytes.get(start..start + 2).and_then(special_token);
            let (token, len) = match two {
                Some(t) => (t, 2),
                None => (
                    special_token(&bytes[start..=start]).unwrap_or(Token::Identifier),
                    1,
                ),
            };
            self.pos += len;
            token
        } else {
            while self.pos < bytes.len()
                && !is_special(bytes[self.pos])
                && !is_whitespace(bytes[self.pos])
            {
                self.pos += 1;
            }
            match &bytes[start..self.pos] {
                b"in" => Token::In,
                b"notin" => Token::NotIn,
                _ => Token::Identifier,
            }
        };
        Item {
            token,
            literal: &self.input[start..self.pos],
            position: start,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Ported from apimachinery's TestLexer.
    #[test]
    fn single_tokens() {
        let cases = [
            ("", Token::EndOfString),
            (",", Token::Comma),
            ("notin", Token::NotIn),
            ("in", Token::In),
            ("=", Token::Equals),
            ("==", Token::DoubleEquals),
            (">", Token::GreaterThan),
            ("<", Token::LessThan),
            // The longest valid token is returned.
            ("!", Token::DoesNotExist),
            ("!=", Token::NotEquals),
            ("(", Token::OpenPar),
            (")", Token::ClosedPar),
            // Non-special characters are part of an identifier.
            ("~", Token::Identifier),
            ("||", Token::Identifier),
        ];
        for (input, token) in cases {
            let item = Lexer::new(input).lex();
            assert_eq!(item.token, token, "{input:?}");
            assert_eq!(item.literal, input, "{input:?}");
        }
    }

    // Ported from apimachinery's TestLexerSequence and TestParserLookahead.
    #[test]
    fn sequences() {
        use Token::*;
        let cases: &[(&str, &[Token])] = &[
            (
                "key in ( value )",
                &[Identifier, In, OpenPar, Identifier, ClosedPar],
            ),
            (
                "key notin ( value )",
                &[Identifier, NotIn, OpenPar, Identifier, ClosedPar],
            ),
            (
                "key in ( value1, value2 )",
                &[
                    Identifier, In, OpenPar, Identifier, Comma, Identifier, ClosedPar,
                ],
            ),
            ("key", &[Identifier]),
            ("!key", &[DoesNotExist, Identifier]),
            ("()", &[OpenPar, ClosedPar]),
            ("", &[]),
            (
                "x in (),y",
                &[Identifier, In, OpenPar, ClosedPar, Comma, Identifier],
            ),
            (
                "== != (), = notin",
                &[
                    DoubleEquals,
                    NotEquals,
                    OpenPar,
                    ClosedPar,
                    Comma,
                    Equals,
                    NotIn,
                ],
            ),
            ("key>2", &[Identifier, GreaterThan, Identifier]),
            ("key<1", &[Identifier, LessThan, Identifier]),
            ("a!=b", &[Identifier, NotEquals, Identifier]),
            ("a=!b", &[Identifier, Equals, DoesNotExist, Identifier]),
            ("a===b", &[Identifier, DoubleEquals, Equals, Identifier]),
        ];
        for (input, expected) in cases {
            let mut lexer = Lexer::new(input);
            let mut got = Vec::new();
            loop {
                let item = lexer.lex();
                if item.token == EndOfString {
                    assert_eq!(item.position, input.len());
                    break;
                }
                assert_eq!(
                    &input[item.position..item.position + item.literal.len()],
                    item.literal
                );
                got.push(item.token);
            }
            assert_eq!(&got, expected, "{input:?}");
        }
    }

    #[test]
    fn positions_and_unicode() {
        let mut l = Lexer::new(" é=ü ");
        assert_eq!(
            l.lex(),
            Item {
                token: Token::Identifier,
                literal: "é",
                position: 1
            }
        );
        assert_eq!(
            l.lex(),
            Item {
                token: Token::Equals,
                literal: "=",
                position: 3
            }
        );
        assert_eq!(
            l.lex(),
            Item {
                token: Token::Identifier,
                literal: "ü",
                position: 4
            }
        );
        assert_eq!(l.lex().token, Token::EndOfString);
        assert_eq!(l.lex().token, Token::EndOfString);
    }
}
