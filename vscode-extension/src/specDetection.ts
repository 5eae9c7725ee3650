//! Recognises a TAIDL spec among Python files by what it calls, so spec-only menu entries
//! appear on specs and not on every Python file.

const ACCELERATOR_CALL = /\bAccelerator\s*\(/;
const SPEC_METHODS = /\.\s*(?:add_instruction|add_data_model|add_semantics)\s*\(/;

export function looksLikeSpec(text: string): boolean {
  return ACCELERATOR_CALL.test(text) || SPEC_METHODS.test(text);
}
