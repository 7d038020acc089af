// Every page's nav: "Sign in", or the signed-in account's name (a link to /account) and "Sign
// out", after "Admin" for an administrator. Loaded by every page shell beside its own script.
import { api, currentUser, describeError } from "./api.js";
import { clear, h } from "./dom.js";

export async function renderAccountNav() {
  const slot = document.getElementById("nav-account");
  if (!slot) return;
  const { user } = await currentUser();
  if (!user) {
    const here = `${location.pathname}${location.search}`;
    const link = slot.querySelector("a");
    if (link && location.pathname !== "/login" && !location.pathname.startsWith("/reset/")) {
      link.href = `/login?next=${encodeURIComponent(here)}`;
    }
    return;
  }
  const current = location.pathname === "/account" ? "page" : null;
  const signOut = h(
    "button",
    {
      type: "button",
      class: "link-button",
      onclick: async () => {
        signOut.disabled = true;
        try {
          await api("/api/auth/logout", { method: "POST" });
          location.assign("/");
        } catch (err) {
          signOut.disabled = false;
          signOut.title = describeError(err);
        }
      },
    },
    "Sign out",
  );
  const admin = user.role === "admin" ? h("a", { href: "/admin", "aria-current": location.pathname === "/admin" ? "page" : null }, "Admin") : null;
  clear(slot).append(...[admin, h("a", { href: "/account", "aria-current": current }, user.name), signOut].filter(Boolean));
}
