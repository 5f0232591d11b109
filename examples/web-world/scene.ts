import {
  AmbientLight,
  BoxGeometry,
  Color,
  DirectionalLight,
  Fog,
  HemisphereLight,
  InstancedMesh,
  Matrix4,
  MeshLambertMaterial,
  PerspectiveCamera,
  Raycaster,
  Scene,
  Vector2,
  Vector3,
  WebGLRenderer,
} from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';
import { BLOCK_COLORS, type Block, CHUNK_SIZE } from './blocks.js';

/**
 * The three.js view: one InstancedMesh of unit cubes per chunk, coloured by block type, under an
 * orbiting camera. It knows blocks, not the network: the world view hands it each chunk's blocks
 * whenever they change, and asks it which block face is under the pointer.
 */

export interface Pick {
  block: Block;
  /** The face's outward normal, in whole blocks: the neighbour a placed block goes to. */
  normal: { x: number; y: number; z: number };
}

const cube = new BoxGeometry(1, 1, 1);
const material = new MeshLambertMaterial();
const colors = new Map(Object.entries(BLOCK_COLORS).map(([type, hex]) => [type, new Color(hex)]));

export class VoxelScene {
  private readonly renderer: WebGLRenderer;
  private readonly scene = new Scene();
  private readonly camera = new PerspectiveCamera(55, 1, 0.1, 500);
  private readonly controls: OrbitControls;
  private readonly meshes = new Map<string, { mesh: InstancedMesh; blocks: Block[] }>();
  private readonly raycaster = new Raycaster();

  constructor(private readonly canvas: HTMLCanvasElement) {
    this.renderer = new WebGLRenderer({ canvas, antialias: true });
    this.renderer.setPixelRatio(Math.min(window.devicePixelRatio, 2));
    this.scene.background = new Color(0xaed6f1);
    this.scene.fog = new Fog(0xaed6f1, 60, 160);
    this.scene.add(new HemisphereLight(0xffffff, 0x556b2f, 1.6), new AmbientLight(0xffffff, 0.4));
    const sun = new DirectionalLight(0xffffff, 1.8);
    sun.position.set(30, 60, 20);
    this.scene.add(sun);
    this.controls = new OrbitControls(this.camera, canvas);
    this.controls.enableDamping = true;
    this.controls.maxPolarAngle = Math.PI * 0.48;
    this.resetCamera();
    new ResizeObserver(() => this.resize()).observe(canvas);
    this.resize();
    this.renderer.setAnimationLoop(() => {
      this.controls.update();
      this.renderer.render(this.scene, this.camera);
    });
  }

  /** Looks at the middle of the starter terrain (2 x 2 chunks) from above one corner. */
  resetCamera(): void {
    const middle = CHUNK_SIZE;
    this.controls.target.set(middle, 1, middle);
    this.camera.position.set(middle + 22, 24, middle + 26);
    this.controls.update();
  }

  /** Replaces the blocks drawn for one chunk. */
  setChunk(key: string, blocks: Block[]): void {
    this.removeChunk(key);
    if (blocks.length === 0) return;
    const mesh = new InstancedMesh(cube, material, blocks.length);
    const matrix = new Matrix4();
    blocks.forEach((block, i) => {
      // Block (x, y, z) fills the unit cube from (x, y, z) to (x+1, y+1, z+1).
      mesh.setMatrixAt(i, matrix.makeTranslation(block.x + 0.5, block.y + 0.5, block.z + 0.5));
      mesh.setColorAt(i, colors.get(block.type) as Color);
    });
    this.scene.add(mesh);
    this.meshes.set(key, { mesh, blocks });
  }

  removeChunk(key: string): void {
    const drawn = this.meshes.get(key);
    if (!drawn) return;
    this.scene.remove(drawn.mesh);
    drawn.mesh.dispose();
    this.meshes.delete(key);
  }

  clear(): void {
    for (const key of [...this.meshes.keys()]) this.removeChunk(key);
  }

  /** The block face under a point of the canvas (client coordinates), if any. */
  pick(clientX: number, clientY: number): Pick | undefined {
    const box = this.canvas.getBoundingClientRect();
    const pointer = new Vector2(
      ((clientX - box.left) / box.width) * 2 - 1,
      -((clientY - box.top) / box.height) * 2 + 1,
    );
    this.raycaster.setFromCamera(pointer, this.camera);
    const meshes = [...this.meshes.values()];
    const [hit] = this.raycaster.intersectObjects(
      meshes.map(({ mesh }) => mesh),
      false,
    );
    if (!hit || hit.instanceId === undefined || !hit.face) return undefined;
    const block = meshes.find(({ mesh }) => mesh === hit.object)?.blocks[hit.instanceId];
    if (!block) return undefined;
    // Instances are translated, never rotated: the geometry's face normal is the world's.
    const normal = new Vector3().copy(hit.face.normal).round();
    return { block, normal: { x: normal.x, y: normal.y, z: normal.z } };
  }

  private resize(): void {
    const { clientWidth: width, clientHeight: height } = this.canvas;
    if (width === 0 || height === 0) return;
    this.renderer.setSize(width, height, false);
    this.camera.aspect = width / height;
    this.camera.updateProjectionMatrix();
  }
}
