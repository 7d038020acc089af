// The pieces of the forms that make an account (the first administrator's, sign-up's): a
// labelled field, and a new password typed twice.
import { h } from "./dom.js";

export function field(id, label, attrs) {
  const input = h("input", { id, required: true, ...attrs });
  return [input, h("div", { class: "field" }, h("label", { for: id }, label), input)];
}

// ``differ(error)`` writes why in ``error`` and answers true when the two do not match.
export function newPassword(prefix) {
  const [password, passwordField] = field(`${prefix}-password`, "Password (at least 10 characters)", {
    type: "password", autocomplete: "new-password", minlength: "10",
  });
  const [again, againField] = field(`${prefix}-again`, "The same again", { type: "password", autocomplete: "new-password" });
  const differ = (error) => {
    if (password.value === again.value) return false;
    error.textContent = "The two passwords differ.";
    return true;
  };
  return { password, fields: [passwordField, againField], differ };
}
