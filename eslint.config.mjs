// ESLint: typescript-eslint's strict type-checked rules and no import cycles over src/, scripts/ and test/.
import { defineConfig } from "eslint/config";
import tseslint from "typescript-eslint";
import { importX, createNodeResolver } from "eslint-plugin-import-x";

export default defineConfig(
  { ignores: ["node_modules/", "artifacts/", "cache/", "typechain-types/", "dist/", "coverage/", "test-output/", "deployments/", "bin/"] },
  {
    files: ["**/*.ts"],
    extends: [tseslint.configs.strictTypeChecked],
    plugins: { "import-x": importX },
    languageOptions: {
      // Each file is checked with its nearest tsconfig (the dashboard client has its own, with DOM types).
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    settings: { "import-x/resolver-next": [createNodeResolver({ extensions: [".ts", ".js", ".json"] })] },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      "import-x/no-cycle": "error",
    },
  },
);
