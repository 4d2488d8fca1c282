// Follow Airflow's colour mode: its UI (next-themes) puts "dark" or "light" on the class of its <html>
// and keeps the choice in localStorage "theme". Inside Airflow the frame is same-origin, so it reads the
// parent's class and follows it when the user toggles it; opened on its own it reads the stored choice.
(function () {
  var root = document.documentElement;
  function fromParent() {
    try {
      if (window.parent !== window) {
        var c = window.parent.document.documentElement.classList;
        if (c.contains("dark")) return "dark";
        if (c.contains("light")) return "light";
      }
    } catch (e) {}
    return null;
  }
  function stored() {
    try {
      var t = window.localStorage.getItem("theme");
      if (t === "dark" || t === "light") return t;
    } catch (e) {}
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  }
  function apply() {
    var dark = (fromParent() || stored()) === "dark";
    root.classList.toggle("dark", dark);
    root.classList.toggle("light", !dark);
  }
  apply();
  try {
    if (window.parent !== window) {
      new MutationObserver(apply).observe(window.parent.document.documentElement, { attributes: true, attributeFilter: ["class"] });
    }
  } catch (e) {}
  window.addEventListener("storage", apply);
})();
