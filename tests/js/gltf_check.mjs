// Loads a .glb with three.js's GLTFLoader (the loader the viewer uses) and
// prints what it found as one JSON line: {"meshes", "vertices", "triangles",
// "attributes", "name"}. Exit status 1 with a message when loading fails.
//   node tests/js/gltf_check.mjs FILE.glb
// three is resolved from web/node_modules (scripts/npm.sh installs it).
import { readFileSync } from 'node:fs';

const file = process.argv[2];
if (!file) {
  console.error('usage: node tests/js/gltf_check.mjs FILE.glb');
  process.exit(2);
}
const loaderUrl = new URL('../../web/node_modules/three/examples/jsm/loaders/GLTFLoader.js', import.meta.url);
const { GLTFLoader } = await import(loaderUrl.href);

const buf = readFileSync(file);
const data = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
new GLTFLoader().parse(
  data,
  '',
  (gltf) => {
    const out = { meshes: 0, vertices: 0, triangles: 0, attributes: [], name: '' };
    gltf.scene.traverse((o) => {
      if (!o.isMesh) return;
      const g = o.geometry;
      out.meshes += 1;
      out.vertices += g.attributes.position.count;
      out.triangles += g.index ? g.index.count / 3 : g.attributes.position.count / 3;
      out.attributes = Object.keys(g.attributes).sort();
      out.name = o.name;
    });
    console.log(JSON.stringify(out));
  },
  (err) => {
    console.error(`gltf_check: ${file}: ${err && err.message ? err.message : err}`);
    process.exit(1);
  },
);
