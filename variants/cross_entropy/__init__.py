"""The cross-entropy family (shared/specs/cross_entropy.md); the Family comes with the operand protocol."""
