// Entry point of the nav script every page shell loads.
import { renderAccountNav } from "../lib/nav.js";

renderAccountNav();
