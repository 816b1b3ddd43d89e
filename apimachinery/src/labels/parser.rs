//! Recursive-descent parser for the label selector string syntax.
//!
//! Ports the `Parser` of `k8s.io/apimachinery/pkg/labels/selector.go`, grammar:
//!
//! ```text
//! <selector>    ::= "" | <requirement> | <requirement> "," <selector>
//! <requirement> ::= [!] KEY [ <set-restriction> | <exact-restriction> ]
//! <set-restriction>   ::= ("in" | "notin") "(" <values> ")"
//! <values>            ::= VALUE | VALUE "," <values>     (VALUE may be empty)
//! <exact-restriction> ::= ("=" | "==" | "!=" | ">" | "<") VALUE
//! ```
//!
//! As in Go, `in`/`notin` are keywords only where an operator may stand: in value position
//! they are ordinary identifiers (`a in (in, notin)`, `notin=in`). Values of a set are
//! sorted and de-duplicated (Go collects them in a `sets.String`). Every error carries the
//! byte offset of the offending token and what was expected there.

use super::SelectorError;
use super::lexer::{Item, Lexer, Token};
use super::selector::{Operator, Requirement, Selector};

impl Selector {
    /// Parses the string syntax (see the [module docs](crate::labels)).
    pub fn parse(selector: &str) -> Result<Selector, SelectorError> {
        Ok(Selector::from_requirements(parse(selector)?))
    }
}

/// Whether `in`/`notin` are keywords (operator position) or identifiers (value position).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser<'a> {
    input: &'a str,
    items: Vec<Item<'a>>,
    position: usize,
}

/// Parses a selector string into its requirements (unsorted).
pub(crate) fn parse(input: &str) -> Result<Vec<Requirement>, SelectorError> {
    let mut lexer = Lexer::new(input);
    let mut items = Vec::new();
    loop {
        let item = lexer.lex();
        items.push(item);
        if item.token == Token::EndOfString {
            break;
        }
    }
    Parser {
        input,
        items,
        position: 0,
    }
    .parse()
}

impl<'a> Parser<'a> {
    fn item(&self, context: Context) -> Item<'a> {
        // `items` always ends with EndOfString and `position` never passes it.
        let mut item = self.items[self.position.min(self.items.len() - 1)];
        if context == Context::Values && matches!(item.token, Token::In | Token::NotIn) {
            item.token = Token::Identifier;
        }
        item
    }

    fn lookahead(&self, context: Context) -> Item<'a> {
        self.item(context)
    }

    fn consume(&mut self, context: Context) -> Item<'a> {
        let item = self.item(context);
        if self.position < self.items.len() - 1 {
            self.position += 1;
        }
        item
    }

    fn syntax(&self, found: Item<'a>, expected: &'static str) -> SelectorError {
        SelectorError::Syntax {
            selector: self.input.to_owned(),
            position: found.position,
            found: if found.token == Token::EndOfString {
                "end of string".to_owned()
            } else {
                found.literal.to_owned()
            },
            expected,
        }
    }

    fn parse(mut self) -> Result<Vec<Requirement>, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            let next = self.lookahead(Context::Values);
            match next.token {
                Token::Identifier | Token::DoesNotExist => {
                    requirements.push(self.parse_requirement()?);
                    let after = self.consume(Context::Values);
                    match after.token {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let following = self.lookahead(Context::Values);
                            if !matches!(following.token, Token::Identifier | Token::DoesNotExist) {
                                return Err(self.syntax(following, "identifier after ','"));
                            }
                        }
                        _ => return Err(self.syntax(after, "',' or end of string")),
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => return Err(self.syntax(next, "'!', identifier, or end of string")),
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, SelectorError> {
        let start = self.lookahead(Context::Values).position;
        let (key, inferred) = self.parse_key_and_infer_operator()?;
        let (operator, values) = match inferred {
            Some(op) => (op, Vec::new()),
            None => {
                let operator = self.parse_operator()?;
                let values = match operator {
                    Operator::In | Operator::NotIn => self.parse_values()?,
                    _ => vec![self.parse_exact_value()?],
                };
                (operator, values)
            }
        };
        Requirement::new(key, operator, values).map_err(|error| SelectorError::Requirement {
            selector: self.input.to_owned(),
            position: start,
            error,
        })
    }

    /// Reads `[!] KEY`; infers `exists`/`!` when no operator follows.
    fn parse_key_and_infer_operator(
        &mut self,
    ) -> Result<(&'a str, Option<Operator>), SelectorError> {
        let mut item = self.consume(Context::Values);
        let negated = item.token == Token::DoesNotExist;
        if negated {
            item = self.consume(Context::Values);
        }
        if item.token != Token::Identifier {
            return Err(self.syntax(item, "identifier"));
        }
        let next = self.lookahead(Context::Values).token;
        let operator = if negated {
            Some(Operator::DoesNotExist)
        } else if matches!(next, Token::EndOfString | Token::Comma) {
            Some(Operator::Exists)
        } else {
            None
        };
        Ok((item.literal, operator))
    }

    fn parse_operator(&mut self) -> Result<Operator, SelectorError> {
        let item = self.consume(Context::KeyAndOperator);
        Ok(match item.token {
            Token::In => Operator::In,
            Token::NotIn => Operator::NotIn,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::NotEquals => Operator::NotEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            _ => return Err(self.syntax(item, "one of in, notin, =, ==, !=, >, <")),
        })
    }

    /// Reads `( VALUE, ... )`, returning the values sorted and de-duplicated.
    fn parse_values(&mut self) -> Result<Vec<String>, SelectorError> {
        let open = self.consume(Context::Values);
        if open.token != Token::OpenPar {
            return Err(self.syntax(open, "'('"));
        }
        let next = self.lookahead(Context::Values);
        let mut values = match next.token {
            Token::Identifier | Token::Comma => {
                let values = self.parse_identifiers_list()?;
                let close = self.consume(Context::Values);
                if close.token != Token::ClosedPar {
                    return Err(self.syntax(close, "')'"));
                }
                values
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                vec![String::new()]
            }
            _ => return Err(self.syntax(next, "',', ')' or identifier")),
        };
        values.sort();
        values.dedup();
        Ok(values)
    }

    /// Reads a possibly empty, comma-separated list of possibly empty identifiers, up to
    /// (not including) the closing parenthesis.
    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, SelectorError> {
        let mut values = Vec::new();
        loop {
            let item = self.consume(Context::Values);
            match item.token {
                Token::Identifier => {
                    values.push(item.literal.to_owned());
                    let next = self.lookahead(Context::Values);
                    match next.token {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(values),
                        _ => return Err(self.syntax(next, "',' or ')'")),
                    }
                }
                // "(," "a,," and ",)" all stand for empty values.
                Token::Comma => {
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    match self.lookahead(Context::Values).token {
                        Token::ClosedPar => {
                            values.push(String::new());
                            return Ok(values);
                        }
                        Token::Comma => {
                            self.consume(Context::Values);
                            values.push(String::new());
                        }
                        _ => {}
                    }
                }
                _ => return Err(self.syntax(item, "',' or identifier")),
            }
        }
    }

    /// Reads the single value after `=`, `==`, `!=`, `>` or `<` (empty before `,` or the end).
    fn parse_exact_value(&mut self) -> Result<String, SelectorError> {
        let next = self.lookahead(Context::Values);
        if matches!(next.token, Token::EndOfString | Token::Comma) {
            return Ok(String::new());
        }
        let item = self.consume(Context::Values);
        if item.token == Token::Identifier {
            Ok(item.literal.to_owned())
        } else {
            Err(self.syntax(item, "identifier"))
        }
    }
}
