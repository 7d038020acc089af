// "/signup": self sign-up on the server's allowed email domains (GRADER_SIGNUP_DOMAINS), with
// a mailed link that makes the account; closed when none are configured.
import { currentUser } from "../lib/api.js";
import { clear, h } from "../lib/dom.js";
import { signupForm } from "../lib/signup-form.js";

async function main() {
  const root = clear(document.getElementById("main"));
  const domains = (document.body.dataset.domains || "").split(",").filter(Boolean);
  root.append(h("h1", {}, "Create an account"));
  const { user } = await currentUser();
  if (user) {
    root.append(h("p", {}, `You are signed in as ${user.name}. `, h("a", { href: "/courses" }, "Your courses"), "."));
    return;
  }
  if (!domains.length) {
    root.append(
      h("p", { id: "signup-closed" }, "This server has no self sign-up. Join with the link or code your instructor gave you, or ask them for an invitation."),
      h("p", {}, h("a", { href: "/login" }, "Sign in")),
    );
    return;
  }
  const list = domains.map((d) => `@${d}`).join(", ");
  root.append(
    signupForm({ hint: `Use your address ending in ${list}. We mail you a link to confirm it; the account is made when you open it.` }),
    h("p", { class: "note" }, "Already have an account? ", h("a", { href: "/login" }, "Sign in"), "."),
  );
}

main();
